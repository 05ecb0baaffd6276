"""Import hygiene (harlequin-style): the light commands never load MindSpore or Textual.

Each command runs in a fresh interpreter through ``msdoctor.cli.main`` with arguments that make it do
its real work; afterwards the wrapper reports which heavy modules ended up in ``sys.modules``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("mindspore", "textual")
WRAPPER = f"""
import importlib, json, os, sys
for name in filter(None, os.environ.get("MSDOCTOR_TEST_PREIMPORT", "").split(",")):
    importlib.import_module(name)  # only used to prove the probe sees heavy modules
from msdoctor.cli import main
argv = json.loads(sys.argv[1])
code = main(argv)
sys.stdout.flush()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {set(HEAVY)!r})
print("\\n@@IMPORTS@@" + json.dumps({{"code": code, "heavy": heavy}}))
"""


def run_command(argv: list[str], cwd: Path, preimport: str = "") -> dict[str, object]:
    env = dict(os.environ, MSDOCTOR_ASCII="1", MSDOCTOR_TEST_PREIMPORT=preimport)
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, json.dumps(argv)], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )
    marker = out.stdout.rfind("@@IMPORTS@@")
    assert marker >= 0, f"{argv}: wrapper did not finish (rc={out.returncode}): {out.stderr[-2000:]}"
    result: dict[str, object] = json.loads(out.stdout[marker + len("@@IMPORTS@@") :])
    result["stderr"] = out.stderr
    result["stdout"] = out.stdout[:marker]
    return result


def need(command: str) -> None:
    if importlib.util.find_spec(f"msdoctor.commands.{command}") is None:
        pytest.skip(f"msdoctor {command}: command module msdoctor.commands.{command} does not exist yet")


def test_rules_and_explain(tmp_path: Path) -> None:
    for argv in (["rules", "--json"], ["rules"], ["explain", "PAR001"], ["explain", "PAR001", "--json"]):
        r = run_command(argv, tmp_path)
        assert r["code"] == 0, (argv, r["stderr"])
        assert r["heavy"] == [], f"msdoctor {' '.join(argv)} imported {r['heavy']}"


def test_logs(tmp_path: Path) -> None:
    need("logs")
    log = tmp_path / "worker_0.log"
    log.write_text(
        "[WARNING] ME(1:1,MainProcess):2026-11-29-19:43:14.451.000 [train.py:1] starting\n"
        "ValueError: For 'MatMul' the input dimensions must be equal, but got 'x1_col': 6 and 'x2_row': 8.\n",
        encoding="utf-8",
    )
    r = run_command(["logs", str(log), "--json"], tmp_path)
    assert r["code"] == 1, r["stderr"]
    assert '"NUM096"' in str(r["stdout"]), "logs did not scan the file (NUM096, PAR001's twin, expected)"
    assert r["heavy"] == [], f"msdoctor logs imported {r['heavy']}"


def test_preflight(tmp_path: Path) -> None:
    need("preflight")
    root = tmp_path / "root"
    root.mkdir()
    r = run_command(["preflight", "--root", str(root), "--no-npu-smi", "--json"], tmp_path)
    assert r["code"] in (0, 1), r["stderr"]
    assert r["heavy"] == [], f"msdoctor preflight imported {r['heavy']}"


def test_analyze(tmp_path: Path) -> None:
    need("analyze")
    empty = tmp_path / "profile"
    empty.mkdir()
    r = run_command(["analyze", str(empty), "--json"], tmp_path)
    assert r["code"] == 2, f"an empty profile folder must be unreadable input: {r}"
    assert r["heavy"] == [], f"msdoctor analyze imported {r['heavy']}"


def test_wrapper_detects_heavy_imports(tmp_path: Path) -> None:
    """The probe is not vacuous: when Textual is loaded in the process, it is reported."""
    r = run_command(["rules", "--json"], tmp_path, preimport="textual")
    assert r["code"] == 0
    assert "textual" in r["heavy"]


def test_ckpt_replay_does_not_import_mindspore(tmp_path: Path) -> None:
    """MindSpore is imported only to read .ckpt files, never to judge a facts snapshot."""
    need("ckpt")
    snapshot = Path(__file__).parent / "rules" / "fixtures" / "CKPT601.fire.json"
    r = run_command(["ckpt", "--facts", str(snapshot), "--json"], tmp_path)
    assert r["code"] == 1 and '"CKPT601"' in str(r["stdout"]), r["stderr"]
    assert r["heavy"] == [], f"msdoctor ckpt --facts imported {r['heavy']}"
