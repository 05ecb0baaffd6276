"""A headline check that could not run is named in the default output with its reason, and the summary
does not look clean then (issue 13 item 5)."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import orjson
import pytest

from msdoctor.commands.preflight import not_evaluated_by_reason, render_text
from msdoctor.engine.evaluate import Evaluation
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import NotEvaluated
from tests.conftest import ROOT, run_cli

GOOD = ROOT / "samples" / "roots" / "good"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cann_without_mindspore(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("root") / "node"
    shutil.copytree(GOOD, root, symlinks=True)
    gone = [p for p in root.rglob("mindspore-*.dist-info")]
    assert gone, "the good root holds MindSpore's dist-info"
    for p in gone:
        shutil.rmtree(p)
    return root


def test_cann_pairing_not_run_is_named_without_v(cann_without_mindspore: Path) -> None:
    args = ("preflight", "--no-npu-smi", "--root", str(cann_without_mindspore), "--master-port", str(_free_port()))
    r = run_cli(*args, timeout=120)
    assert "Traceback" not in r.err
    line = next(ln for ln in r.out.splitlines() if "ENV101" in ln)
    assert "CANN version not accepted by the installed MindSpore" in line
    assert line.rstrip().endswith("not evaluated: MindSpore is not installed")
    assert "RT101 … RT110 (10 checks) not evaluated: no rank table" in r.out  # shared reasons are named once
    assert not r.out.splitlines()[-2].startswith("No issues found")
    payload = orjson.loads(run_cli(*args, "--json", timeout=120).out)
    assert payload["coverage"]["complete"] is False and payload["coverage"]["not_evaluated"] >= 12
    assert {"rule": "ENV101", "reason": "pkg.mindspore.version: MindSpore is not installed"} in payload["not_evaluated"]


def test_summary_without_findings_but_with_unrun_checks_is_incomplete(capsys: pytest.CaptureFixture[str]) -> None:
    ev = Evaluation(passed=["ENV102"], not_evaluated=[NotEvaluated("ENV101", "pkg.mindspore.version: MindSpore is not installed")])
    group = {"group": "cann", "title": "CANN, driver and NPUs", "status": "ok", "summary": "CANN 8.5.0",
             "collect_ms": 1.0, "check_ms": {}, "findings": [], "passed": ["ENV102"],
             "not_evaluated": [n.to_dict() for n in ev.not_evaluated],
             "titles": {"ENV101": "CANN version not accepted by the installed MindSpore"}}  # fmt: skip
    render_text(ev, [group], Facts(), verbose=False, elapsed_ms=5.0)
    out = capsys.readouterr().out
    assert "No issues found" not in out
    assert "Incomplete — no issues in what could be checked, 1 check(s) could not run" in out
    assert "ENV101 (CANN version not accepted by the installed MindSpore) not evaluated: MindSpore is not installed" in out
    render_text(Evaluation(passed=["ENV102"]), [{**group, "not_evaluated": []}], Facts(), verbose=False, elapsed_ms=5.0)
    assert "No issues found" in capsys.readouterr().out


def test_reasons_are_grouped_by_what_is_missing() -> None:
    rows = [{"rule": f"RT10{i}", "reason": f"ranktable.f{i}: no rank table"} for i in range(1, 6)]
    rows.append({"rule": "RT111", "reason": "env.vars: ASCEND_RT_VISIBLE_DEVICES not set"})
    assert not_evaluated_by_reason(rows) == [
        ("RT101 … RT105 (5 checks)", "no rank table"),
        ("RT111", "ASCEND_RT_VISIBLE_DEVICES not set"),
    ]
