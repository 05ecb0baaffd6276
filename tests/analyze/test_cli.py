"""`msdoctor analyze` as a user runs it: text, --json contract, exit codes, merge, replay."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "profiles"


def test_json_contract_on_generated_sample():
    res = run_cli("analyze", str(SAMPLES / "gen_8rank"), "--json")
    assert res.rc == 0, res.err
    out = res.json()
    assert out["command"] == "analyze" and isinstance(out["not_evaluated"], list)
    assert {f["rule"] for f in out["findings"]} >= {"PERF302", "COMM301", "PAR301", "COMM302"}
    slow = next(f for f in out["findings"] if f["rule"] == "PERF302")
    assert slow["rank"] == 2 and slow["evidence"] and slow["fix"]
    assert len(out["ranks"]) == 8
    for r in out["ranks"]:
        assert {"rank", "steps", "step_ms", "compute_ms", "comm_ms", "comm_overlapped_ms", "free_ms", "comm_ratio"} <= set(r)
        assert r["comm_ratio"] == pytest.approx(r["comm_ms"] / (r["compute_ms"] + r["comm_ms"] + r["free_ms"]), abs=1e-3)


def test_text_output_on_real_cpu_profile():
    res = run_cli("analyze", str(SAMPLES / "cpu_2rank"))
    assert res.rc == 0, res.err
    assert "2 rank(s) (cpu)" in res.out
    assert "top operators" in res.out and "MatMul" in res.out and "AllReduce" in res.out
    assert "PERF301" in res.out  # the real run: ~30 % exposed AllReduce on 2 CPU ranks


def test_missing_dir_and_no_profile_exit_2_one_line(tmp_path):
    res = run_cli("analyze", str(tmp_path / "nope"))
    assert res.rc == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1 and "no such directory" in res.err
    (tmp_path / "x_ascend_ms" / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (tmp_path / "x_ascend_ms" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_bytes(b"\x00\x01binary")
    res = run_cli("analyze", str(tmp_path))
    assert res.rc == 2 and len(res.err.strip().splitlines()) == 1
    assert "no readable profile data" in res.err and "not JSON" in res.err


def test_merge_trace_every_rank_a_process(tmp_path):
    out = tmp_path / "merged.json"
    res = run_cli("analyze", str(SAMPLES / "cpu_2rank"), "--merge-trace", str(out), "--json")
    assert res.rc == 0, res.err
    events = orjson.loads(out.read_bytes())
    names = sorted(e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name")
    assert names == ["rank 0: CPU OP", "rank 0: Scope Layer", "rank 1: CPU OP", "rank 1: Scope Layer"]
    pids = {e["pid"] // 1_000_000 for e in events}
    assert pids == {0, 1}
    xs = [e for e in events if e["ph"] == "X"]
    assert xs and all(isinstance(e["ts"], float) and isinstance(e["dur"], float) for e in xs)
    assert res.json()["merged_trace"]["events"] == len(events)


def test_dump_and_replay_facts(tmp_path):
    f = tmp_path / "facts.json"
    a = run_cli("analyze", str(SAMPLES / "gen_8rank"), "--json", "--dump-facts", str(f))
    b = run_cli("analyze", "--facts", str(f), "--json")
    assert a.rc == b.rc == 0
    assert [x["message"] for x in a.json()["findings"]] == [x["message"] for x in b.json()["findings"]]
    assert a.json()["ranks"] == b.json()["ranks"]


def test_baseline_option(tmp_path):
    res = run_cli("analyze", str(SAMPLES / "cpu_2rank"), "--baseline", str(SAMPLES / "cpu_2rank"), "--json")
    assert res.rc == 0, res.err
    assert res.json()["compare"]["phases"]["step_ms"]["ratio"] == pytest.approx(1.0)
    assert "PERF305" in res.json()["passed"]


def test_baseline_text_says_it_compared_even_without_a_regression():
    same = run_cli("analyze", str(SAMPLES / "cpu_2rank"), "--baseline", str(SAMPLES / "cpu_2rank"), env={**os.environ, "COLUMNS": "200"})
    assert same.rc == 0, same.err
    assert f"baseline {SAMPLES / 'cpu_2rank'}: step 194.0 ms → 194.0 ms (1.00×), 2 → 2 rank(s)\n" in same.out
    other = run_cli("analyze", str(SAMPLES / "cpu_2rank"), "--baseline", str(SAMPLES / "gen_8rank"), env={**os.environ, "COLUMNS": "200"})
    assert "8 → 2 rank(s); the rank counts differ" in other.out


def test_analyze_does_not_import_mindspore_or_textual():
    code = (
        "import sys; from msdoctor.cli import main; "
        f"rc = main(['analyze', r'{SAMPLES / 'cpu_2rank'}', '--json']); "
        "bad = [m for m in ('mindspore', 'textual') if m in sys.modules]; "
        "sys.stderr.write(repr(bad)); sys.exit(3 if bad else rc)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-500:]


def test_merge_trace_includes_recovered_truncated_rank(make_tree, tmp_path):
    import shutil

    root = tmp_path / "t"
    shutil.copytree(make_tree("trunc", ranks=2, steps=3, kernels=32, truncate_rank=1), root)
    out = tmp_path / "m.json"
    res = run_cli("analyze", str(root), "--merge-trace", str(out), "--json")
    assert res.rc == 0, res.err
    payload = res.json()
    assert [r["rank"] for r in payload["files"]["recovered"]] == [1]
    assert any(f["rule"] == "PERF306" and f["rank"] == 1 for f in payload["findings"])
    events = orjson.loads(out.read_bytes())
    per_rank = {0: 0, 1: 0}
    for e in events:
        per_rank[e["pid"] // 1_000_000] += 1
    assert 0 < per_rank[1] < per_rank[0]  # rank 1 kept its events up to the cut


def test_top_limits_the_operator_table_and_bad_memory_limit_is_usage_error():
    res = run_cli("analyze", str(SAMPLES / "cpu_2rank"), "--top", "2")
    table = res.out.split("top operators")[1].split("communication ops")[0]
    assert "AllReduce" in table and "MatMul" in table and "BiasAdd" not in table
    bad = run_cli("analyze", str(SAMPLES / "cpu_2rank"), "--memory-limit", "lots")
    assert bad.rc == 2 and "--memory-limit 'lots'" in bad.err and "Traceback" not in bad.err
