"""The fold behind the monitor (no UI): events and findings into one immutable snapshot."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from msdoctor.tui.state import RunState
from msdoctor.watch.watchdog import Watchdog


def write_run(run_dir, fail_rank1: bool = False, slow_rank1: bool = False):
    for rank in (0, 1):
        wd = Watchdog(run_dir, rank, world=2, heartbeat_s=60).start({"model": "tiny"})
        for step in range(1, 9):
            wd.phase("forward", step)
            own = 0.2 + (0.3 if slow_rank1 and rank == 1 else 0.0)
            # the peer of a straggler waits for it in the collective: equal step times, unequal own work
            wait = 0.3 - (own - 0.2)
            wd.step(step, loss=5.0 - step / 4, step_time=own + wait, data_wait=0.01, grad_norm=1.0 + rank,
                    loss_scale=4096.0, phases={"forward": own, "collective": wait})
        if fail_rank1 and rank == 1:
            wd.exception(RuntimeError("For 'MatMul' the input dimensions must be equal\nsecond line"))
            wd.close("failed")
        else:
            wd.close("ok")


def test_state_folds_events_per_rank(tmp_path):
    write_run(tmp_path, fail_rank1=True)
    st = RunState(tmp_path, clock=lambda: 1e12)
    assert st.poll() is True
    snap = st.snapshot()
    r0, r1 = snap.ranks
    assert (r0.rank, r0.status, r0.step, r0.loss, round(r0.step_ms)) == (0, "ended", 8, 3.0, 500)
    assert r1.status == "failed" and r1.where == "RuntimeError: For 'MatMul' the input dimensions must be equal"
    assert [p.step for p in r0.series] == list(range(1, 9)) and r0.series[0].loss_scale == 4096.0
    assert st.poll() is False  # nothing new: offsets advanced


def test_straggler_scored_by_own_work_not_step_time(tmp_path):
    write_run(tmp_path, slow_rank1=True)
    st = RunState(tmp_path)
    st.poll()
    snap = st.snapshot()
    r0, r1 = snap.ranks
    assert round(r0.step_ms) == round(r1.step_ms) == 500  # the peer waits: step times alike
    assert r1.straggler > 1.3 > r0.straggler
    assert snap.stragglers == frozenset({1})


def test_snapshot_is_immutable_and_shares_unchanged_rows(tmp_path):
    write_run(tmp_path)
    st = RunState(tmp_path)
    st.poll()
    a = st.snapshot()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.ranks[0].step = 99  # type: ignore[misc]
    assert isinstance(a.ranks, tuple) and isinstance(a.ranks[0].series, tuple)
    Watchdog(tmp_path, 1, world=2, heartbeat_s=60).start().step(9, loss=1.0, step_time=0.5)
    st.poll()
    b = st.snapshot()
    assert b.ranks[0] is a.ranks[0]  # rank 0 unchanged: the same object
    assert b.ranks[1].step == 9 and a.ranks[1].step == 8  # the older snapshot did not move


def test_rank_without_events_for_a_while_is_shown_silent(tmp_path):
    wd = Watchdog(tmp_path, 0, world=1, heartbeat_s=60).start()
    wd.step(1, loss=1.0)  # no close(): the process was killed
    st = RunState(tmp_path)
    st.poll()
    row = st.snapshot().ranks[0]
    assert row.shown_status(row.last_seen + 2) == "running"
    assert row.shown_status(row.last_seen + 30) == "silent"


def test_state_skips_garbage_and_counts_it(tmp_path):
    write_run(tmp_path)
    with open(tmp_path / "events" / "rank_0.jsonl", "ab") as fh:
        fh.write(b"\x00\xffnot json\n[1,2]\n")
    with open(tmp_path / "findings.jsonl", "ab") as fh:
        fh.write(b'{"rule": 5}\n')
    st = RunState(tmp_path)
    st.poll()
    snap = st.snapshot()
    assert snap.skipped == 3 and snap.ranks[0].step == 8 and snap.findings == ()


def test_findings_deduplicated_by_rule_and_rank(tmp_path):
    write_run(tmp_path)
    f = {"rule": "COMM201", "severity": "error", "rank": 1, "step": 3, "message": "rank 1 stopped"}
    with open(tmp_path / "findings.jsonl", "wb") as fh:
        fh.write(orjson.dumps(f) + b"\n")
        fh.write(orjson.dumps({**f, "message": "rank 1 stopped at train.py:42"}) + b"\n")
    st = RunState(tmp_path)
    st.poll()
    snap = st.snapshot()
    assert len(snap.findings) == 1 and snap.findings[0].message.endswith("train.py:42")
    assert snap.culprit == 1 and snap.root_rule == "COMM201"
    assert snap.by_severity() == {"error": 1, "warning": 0, "info": 0}


def test_retracted_finding_disappears(tmp_path):
    write_run(tmp_path)
    f = {"rule": "COMM201", "severity": "error", "rank": None, "step": 3, "message": "a rank stopped"}
    with open(tmp_path / "findings.jsonl", "wb") as fh:
        fh.write(orjson.dumps(f) + b"\n")
        fh.write(orjson.dumps({**f, "retracted": True}) + b"\n")
        fh.write(orjson.dumps({**f, "rank": 1, "message": "rank 1 stopped"}) + b"\n")
    st = RunState(tmp_path)
    st.poll()
    assert [(x.rank, x.message) for x in st.snapshot().findings] == [(1, "rank 1 stopped")]


def test_job_figures_from_run_json(tmp_path):
    write_run(tmp_path)
    (tmp_path / "run.json").write_bytes(orjson.dumps({
        "steps": 20, "status": "running",
        "config": {"train": {"global_batch_size": 16}, "model": {"seq_length": 64}}}))
    # re-open rank 0 and 1 as running (write_run closed them): a live job has an ETA
    for rank in (0, 1):
        Watchdog(tmp_path, rank, world=2, heartbeat_s=60).start()
    st = RunState(tmp_path)
    st.poll()
    snap = st.snapshot()
    assert snap.steps_per_s is not None and snap.steps_per_s > 0
    assert snap.tokens_per_s == pytest.approx(snap.steps_per_s * 16 * 64)
    assert snap.target_steps == 20 and snap.eta_s == pytest.approx(12 / snap.steps_per_s)


def test_monitor_cli_missing_dir_is_one_line(cli, tmp_path):
    r = cli("monitor", str(tmp_path / "nope"))
    assert r.rc == 2 and r.err.count("\n") == 1 and "no such run directory" in r.err


def test_train_tui_without_a_terminal_is_a_usage_error(cli, tmp_path):
    r = cli("train", "--tui", "--run-dir", str(tmp_path / "r"))
    assert r.rc == 2 and "--tui needs a terminal" in r.err and not (tmp_path / "r").exists()



def test_replay_releases_events_and_findings_at_their_pace():
    from msdoctor.tui.source import ReplayReader
    from tests.tui.conftest import RUNS

    mono = [100.0]
    rp = ReplayReader(RUNS / "hang", speed=2.0, monotonic=lambda: mono[0])
    st = RunState(RUNS / "hang", clock=rp.clock, reader=rp)
    st.poll()  # the replay starts: only what was written at the first event's time
    first = st.snapshot()
    assert first.t == rp.t0 and all(r.step is None for r in first.ranks) and first.findings == ()
    mono[0] += 3.0  # 6 s of the run at speed 2
    st.poll()
    mid = st.snapshot()
    assert mid.t == rp.t0 + 6.0
    assert all(r.last_seen is None or r.last_seen <= rp.t0 + 6.0 for r in mid.ranks)
    mono[0] += (rp.t_end - rp.t0) / 2.0  # the whole run
    st.poll()
    end = st.snapshot()
    live = RunState(RUNS / "hang")
    live.poll()
    assert [(r.rank, r.step, r.status) for r in end.ranks] == [(r.rank, r.step, r.status) for r in live.snapshot().ranks]
    assert {f.rule for f in end.findings} == {"COMM201", "COMM203"} and rp.done


def test_monitor_replay_speed_must_be_positive(cli, tmp_path):
    (tmp_path / "events").mkdir()
    r = cli("monitor", str(tmp_path), "--replay", "0")
    assert r.rc == 2 and "--replay speed must be positive" in r.err


def test_monitor_web_port_in_use_is_one_line(cli, tmp_path):
    import socket

    (tmp_path / "events").mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = cli("monitor", str(tmp_path), "--web", "--port", str(s.getsockname()[1]))
    assert r.rc == 2 and r.err.count("\n") == 1 and "cannot listen on 127.0.0.1:" in r.err
