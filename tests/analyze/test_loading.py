"""Discovery and bad input: truncated, non-JSON, garbage and foreign-format files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from msdoctor.checks.perf import loss_line
from msdoctor.errors import InputError
from msdoctor.facts import profile as prof
from msdoctor.facts import profile_trace as pt
from msdoctor.facts.profile_files import discover


def rank_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.name.endswith("_ascend_ms"))


@pytest.fixture
def small(make_tree, tmp_path):
    src = make_tree("small", ranks=4, steps=3, kernels=64)
    dst = tmp_path / "tree"
    shutil.copytree(src, dst)
    return dst


def test_discovery_ranks_from_profiler_info(small):
    d = discover(small)
    assert [r.rank for r in d.ranks] == [0, 1, 2, 3]
    assert {r.rank_source for r in d.ranks} == {"profiler_info"}
    assert "trace_view" in d.ranks[0].files and "communication_matrix" in d.ranks[0].files


def test_duplicate_rank_keeps_newer_folder(small):
    old = rank_dirs(small)[1]
    dup = small / old.name.replace("20251129100000001", "20251129090000001")
    shutil.copytree(old, dup)
    d = discover(small)
    assert [r.rank for r in d.ranks] == [0, 1, 2, 3]
    assert d.ranks[1].path == old
    # the duplicate says which copy was kept and why
    assert any(s.path == str(dup) and f"rank 1 twice: kept {old} (newer timestamp in its name)" in s.reason for s in d.skipped)


def test_missing_and_empty_dirs_raise_input_error(tmp_path):
    with pytest.raises(InputError, match="no such directory"):
        discover(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no MindSpore profiler output"):
        discover(tmp_path / "empty")


def test_truncated_trace_recovered_with_dropped_bytes(small, tmp_path):
    trace = rank_dirs(small)[1] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    full = orjson.loads(trace.read_bytes())
    size = trace.stat().st_size
    cut = int(size * 0.6)
    with trace.open("r+b") as f:
        f.truncate(cut)
    tf, skip = pt.prepare_trace(1, trace, tmp_path)
    assert skip is None and tf is not None and tf.dropped_bytes > 0
    kept = orjson.loads(tf.path.read_bytes())  # the recovered copy is valid JSON
    assert 0 < len(kept) < len(full) and kept == full[: len(kept)]  # a prefix of whole events
    assert tf.dropped_bytes == cut - (tf.path.stat().st_size - 3)  # 3 = "\n]\n"
    d = prof.collect(small, tmpdir=tmp_path)
    rec = d.facts["profile.files"]["recovered"]
    assert [(r["rank"], r["path"], r["dropped_bytes"]) for r in rec] == [(1, str(trace), tf.dropped_bytes)]


def test_trace_missing_only_closing_bracket_keeps_last_event(small, tmp_path):
    trace = rank_dirs(small)[0] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    n = len(orjson.loads(trace.read_bytes()))
    text = trace.read_bytes().rstrip()
    trace.write_bytes(text[:-1])  # drop only the "]"
    tf, skip = pt.prepare_trace(0, trace, tmp_path)
    assert skip is None and len(orjson.loads(tf.path.read_bytes())) == n


@pytest.mark.parametrize(
    "content, reason",
    [(b"\x00\x9f\xff garbage \x01" * 50, "not JSON"), (b'{"traceEvents": []}', "a JSON object"), (b"", "empty file")],
)
def test_unreadable_trace_is_skipped_and_others_still_used(small, tmp_path, content, reason):
    trace = rank_dirs(small)[2] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    trace.write_bytes(content)
    d = prof.collect(small, tmpdir=tmp_path)
    skips = d.facts["profile.files"]["skipped"]
    assert any(s["rank"] == 2 and reason in s["reason"] for s in skips), skips
    assert d.facts["profile.files"]["traces_read"] == 3
    assert len(d.facts["profile.ranks"]) == 4  # rank 2's step_trace_time.csv still counts


def test_array_with_bad_json_inside_is_reported(small, tmp_path):
    trace = rank_dirs(small)[3] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    trace.write_bytes(b'[{"name": "a", "ph": "X", "ts": "1", "dur": "2"}, {"name": oops}]')
    d = prof.collect(small, tmpdir=tmp_path)
    skips = d.facts["profile.files"]["skipped"]
    assert any(s["rank"] == 3 and "DuckDB could not read it" in s["reason"] for s in skips), skips
    assert d.facts["profile.files"]["traces_read"] == 4  # prepared, but the scan left it out


def test_csv_with_unknown_columns_is_not_read_as_zeros(small, tmp_path):
    st = rank_dirs(small)[0] / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    st.write_text("Step,Compute Time,Comm\n1,100,20\n")
    d = prof.collect(small, tmpdir=tmp_path)
    skips = d.facts["profile.files"]["skipped"]
    assert any("format not known: columns" in s["reason"] and s["rank"] == 0 for s in skips)
    r0 = next(r for r in d.facts["profile.ranks"] if r["rank"] == 0)
    assert r0["source"] == "trace_view.json" and r0["compute_ms"] == pytest.approx(100.0)


def test_communication_json_of_unknown_shape(small, tmp_path):
    c = rank_dirs(small)[0] / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    c.write_text(json.dumps({"ops": [1, 2]}))
    m = rank_dirs(small)[0] / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json"
    m.write_text("{not json")
    d = prof.collect(small, tmpdir=tmp_path)
    reasons = [s["reason"] for s in d.facts["profile.files"]["skipped"] if s["rank"] == 0]
    assert any("expected step<N> keys" in r for r in reasons) and any("not valid JSON" in r for r in reasons)


def test_cpu_rank_numbering_without_profiler_info(tmp_path):
    cpu = Path(__file__).resolve().parents[2] / "samples" / "profiles" / "cpu_2rank"
    d = discover(cpu)
    assert [(r.rank, r.rank_source) for r in d.ranks] == [(0, "cpu_op suffix"), (1, "cpu_op suffix")]
    m = prof.collect(cpu, tmpdir=tmp_path).model
    assert m is not None and m.kinds == {0: "cpu", 1: "cpu"}  # no profiler_info, no Ascend Hardware events


def test_collective_names_versus_lookalike_compute_ops(tmp_path):
    """BroadcastTo / ReduceSum are compute; AllReduce-op / hcom_send__ / Receive-op are communication."""
    d = tmp_path / "h_1_20250101000000000_ascend_ms" / "ASCEND_PROFILER_OUTPUT"
    d.mkdir(parents=True)
    ev = [{"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "CPU OP"}}]
    ops = [("Default/BroadcastTo-op0", 0, 10), ("Default/ReduceSum-op1", 10, 10), ("Default/AllReduce-op2", 20, 30),
           ("hcom_send__1_0_1", 50, 5), ("Receive-op3", 55, 5), ("Default/MatMul-op4", 60, 40)]  # fmt: skip
    ev += [{"ph": "X", "name": n, "pid": 2, "tid": 0, "ts": str(1000.0 + t), "dur": str(float(du))} for n, t, du in ops]
    (d / "trace_view.json").write_text(json.dumps(ev))
    facts = prof.collect(tmp_path, tmpdir=tmp_path).facts
    r = facts["profile.ranks"][0]
    assert r["compute_ms"] == pytest.approx(0.060) and r["comm_ms"] == pytest.approx(0.040)
    assert sorted(o["type"] for o in facts["profile.comm_ops"]) == ["allreduce", "receive", "send"]


def test_rank_id_inside_profiler_info_must_agree(small, tmp_path):
    info = rank_dirs(small)[2] / "profiler_info_2.json"
    data = json.loads(info.read_text())
    data["ms_profiler_info"]["rank_id"] = "7"
    info.write_text(json.dumps(data))
    skips = prof.collect(small, tmpdir=tmp_path).facts["profile.files"]["skipped"]
    assert any(s["rank"] == 2 and "disagrees with the file name" in s["reason"] for s in skips)


def test_links_without_metadata_use_the_self_link(problems_tree, tmp_path):
    """No profiler_metadata.json: local ranks map through the `i-i` self links every rank reports (local i
    is the rank that reports `i-i`, as msprof-analyze's CommMatrixAnalysis maps them), so both ends of
    4→5 are known; there is a single pipeline stage."""
    copy = tmp_path / "nometa"
    shutil.copytree(problems_tree, copy)
    for f in copy.glob("*/profiler_metadata.json"):
        f.unlink()
    facts = prof.collect(copy, tmpdir=tmp_path).facts
    pcie = [x for x in facts["profile.links"] if x["transport"] == "PCIE"]
    assert [(x["src"], x["dst"]) for x in pcie] == [(4, 5)]
    assert len(facts["profile.stages"]) == 1


def test_overlap_events_named_by_their_thread(small, tmp_path):
    """Overlap Analysis events whose own name is not the category are read by their thread's name."""
    trace = rank_dirs(small)[0] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = orjson.loads(trace.read_bytes())
    for e in events:
        if e.get("pid") == 4000 and e["ph"] == "X":
            e["name"] = "OverlapSlice"  # category now only in the thread_name meta rows
    trace.write_bytes(orjson.dumps(events))
    (trace.parent / "step_trace_time.csv").unlink()
    r0 = next(r for r in prof.collect(small, tmpdir=tmp_path).facts["profile.ranks"] if r["rank"] == 0)
    assert r0["source"] == "trace_view.json"
    assert r0["compute_ms"] == pytest.approx(100.0) and r0["comm_ms"] == pytest.approx(20.0)


def test_trace_cut_in_half_reports_lost_collectives_and_analyses(small, tmp_path):
    """Issue 13: a trace cut in half said only "264 bytes dropped" while a quarter of the collectives vanished.
    Now the loss is counted in events, steps and collectives (against the rank's own communication.json)
    and the analyses that read the trace for that rank are named."""
    rank1 = rank_dirs(small)[1] / "ASCEND_PROFILER_OUTPUT"
    trace = rank1 / "trace_view.json"
    with trace.open("r+b") as f:
        f.truncate(trace.stat().st_size // 2)
    (rank1 / "step_trace_time.csv").unlink()  # the breakdown of rank 1 now comes from the cut trace
    d = prof.collect(small, tmpdir=tmp_path)
    (rec,) = d.facts["profile.files"]["recovered"]
    total = rec["collectives_in_communication_json"]
    assert total > 0 and 0 < rec["collectives_read"] < total
    assert rec["collectives_lost"] == total - rec["collectives_read"]
    assert rec["steps_read"] < rec["peer_steps"] and rec["events_read"] < rec["peer_events"]
    assert any("per-step breakdown" in a for a in rec["analyses_touched"])
    assert any("communication ops" in a for a in rec["analyses_touched"])
    line = loss_line(rec)
    assert f"{rec['collectives_lost']} collective(s) missing" in line and "affects: per-step breakdown" in line


def test_op_statistic_is_read_when_kernel_details_is_absent(small, tmp_path):
    """op_statistic.csv (documented columns OP Type, Core Type, Count, Total Time(us)) gives the same top
    operators as kernel_details.csv; its HCCL-core rows are communication, never compute."""
    with_kd = prof.collect(small, tmpdir=tmp_path).facts["profile.top_ops"]
    for d in rank_dirs(small):
        (d / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").unlink()
        with (d / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").open("a") as f:
            f.write("hcom_allReduce_,HCCL,4,999999.000,1.0,1.0,1.0,90.00\n")
    facts = prof.collect(small, tmpdir=tmp_path).facts
    ops = facts["profile.top_ops"]
    assert [(o["op"], o["count"]) for o in ops] == [(o["op"], o["count"]) for o in with_kd]
    assert [o["total_ms"] for o in ops] == pytest.approx([o["total_ms"] for o in with_kd], abs=0.01)
    assert {r["file"] for r in facts["profile.files"]["read"]} >= {"op_statistic"}
