"""`make demo`'s own sequence, exactly: train with --stop-on-hang, then `msdoctor report` on the run.

Before, the report re-judged the stall after the supervisor's kill (4.89 s recorded against a 5 s
threshold) and printed "✓ no findings" while findings.jsonl held COMM201 — a coin flip per run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def _demo_train_args() -> list[str]:
    """The arguments of the demo's `msdoctor train` line, read from the Makefile (so they cannot drift)."""
    for line in MAKEFILE.read_text().splitlines():
        m = re.search(r"msdoctor train (.*?) --run-dir \$\(DEMO_RUN\)", line)
        if m:
            return m.group(1).split()
    raise AssertionError("no `msdoctor train … --run-dir $(DEMO_RUN)` line in the Makefile's demo target")


def test_make_demo_report_names_the_hung_rank(tmp_path):
    args = _demo_train_args()
    assert "--stop-on-hang" in args and "hang:rank=1,step=4" in args
    run = tmp_path / "demo"
    train = run_cli("train", *args, "--run-dir", str(run), timeout=420)
    assert train.rc <= 1, train.err
    live = {}
    for raw in (run / "findings.jsonl").read_bytes().splitlines():
        d = orjson.loads(raw)
        live[(d["rule"], d["rank"])] = d
    assert ("COMM201", 1) in live, live.keys()

    text = run_cli("report", str(run), env=dict(os.environ, COLUMNS="200"))
    assert text.rc == 1, (text.out, text.err)
    assert "COMM201" in text.out and "no findings" not in text.out
    assert re.search(r"root cause.*COMM201 on rank 1", text.out), text.out
    assert "ranks: 0 stopped" in text.out and "1 stopped" in text.out  # by the supervisor, not vanished

    rep = run_cli("report", str(run), "--json").json()
    assert (rep["root_cause"]["rule"], rep["root_cause"]["rank"]) == ("COMM201", 1)
    # report, report.json and findings.jsonl agree
    closing = orjson.loads((run / "report.json").read_bytes())
    keys = {(f["rule"], f["rank"]) for f in rep["findings"]}
    assert keys == {(f["rule"], f["rank"]) for f in closing["findings"]}
    assert {k for k in live if k[0].startswith("COMM2")} <= keys
    assert closing["root_cause"] == rep["root_cause"]
