"""Adding a rule needs only its TOML, its fixtures and (for a check rule) its function (issue 10 item 7).

Shown twice: ENV111, a real rule added with no list edited anywhere, which `msdoctor preflight` runs;
and a throw-away rule in a copy of the catalogue whose check lives in a module that exists only in
this test, which `msdoctor preflight` runs too.
"""

from __future__ import annotations

import re
import shutil
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

import msdoctor.engine.catalogue as cat
from msdoctor.cli import main
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Hit, check_params
from tests.conftest import ROOT

ROOTS = ROOT / "samples" / "roots"


def _preflight(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    rc = main(["preflight", "--json", "--no-npu-smi", "--root", str(ROOTS / "good"), *args])
    return rc, orjson.loads(capsys.readouterr().out)


def test_env111_runs_in_preflight(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = tmp_path / "launch.env"
    env.write_text("GLOG_v=9\nGLOG_logtostderr=0\n")
    rc, out = _preflight(capsys, "--env-file", str(env))
    hits = [f for f in out["findings"] if f["rule"] == "ENV111"]
    assert rc == 1 and len(hits) == 2, out["findings"]
    assert "GLOG_v='9' is not a MindSpore log level" in hits[0]["message"] + hits[1]["message"]
    group = next(g for g in out["groups"] if g["group"] == "env")
    assert "ENV111" in group["findings"]
    env.write_text("GLOG_v=3\n")
    rc, out = _preflight(capsys, "--env-file", str(env))
    assert "ENV111" in next(g for g in out["groups"] if g["group"] == "env")["passed"]


NEW_RULE = """
id = "DATA199"
title = "A rule that exists only in this test"
severity = "warning"
area = "DATA"
source = "env"
preflight_group = "host"
check = "probe_tmp.always"
detects = "detects that the test added it"
cause = "the test wrote this file"
confirm = "read the test"
fix = "nothing to fix here"
example = "DATA199 fired"
references = ["tests/preflight/test_catalogue_driven.py"]
[params]
word = "hello"
"""


@check_params(word=str)
def always(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    yield Hit(message=f"probe says {params['word']}", evidence=(Evidence(text="x", fact="host.os"),))


def test_a_new_rule_runs_by_adding_its_toml_and_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(cat.rules_root(), rules, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    (rules / "data" / "DATA199.toml").write_text(NEW_RULE, encoding="utf-8")
    module = types.ModuleType("msdoctor.checks.probe_tmp")
    module.always = always  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "msdoctor.checks.probe_tmp", module)
    monkeypatch.setattr(cat, "rules_root", lambda: rules)
    cat.load_catalogue.cache_clear()
    try:
        rc, out = _preflight(capsys)
    finally:
        cat.load_catalogue.cache_clear()
    host = next(g for g in out["groups"] if g["group"] == "host")
    assert "DATA199" in host["findings"], host
    assert any(f["rule"] == "DATA199" and f["message"] == "probe says hello" for f in out["findings"])


def test_preflight_validates_the_params_of_the_rules_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(cat.rules_root(), rules, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    text = (rules / "data" / "DATA101.toml").read_text(encoding="utf-8")
    bad = re.sub(r"(?m)^min_soft = .*$", 'min_soft = "lots"', text)
    assert bad != text
    (rules / "data" / "DATA101.toml").write_text(bad, encoding="utf-8")
    monkeypatch.setattr(cat, "rules_root", lambda: rules)
    rc = main(["preflight", "--no-npu-smi", "--root", str(ROOTS / "good")])
    err = capsys.readouterr().err
    assert rc == 2 and "DATA101.toml: field 'params.min_soft' must be integer, got 'lots'" in err
    assert err.count("\n") == 1
