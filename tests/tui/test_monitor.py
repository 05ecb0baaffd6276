"""The monitor over event streams written by the real Watchdog."""

from __future__ import annotations

import asyncio

import orjson

from msdoctor.tui.app import make_app
from msdoctor.tui.state import RunState
from msdoctor.watch.watchdog import Watchdog


def write_run(run_dir, fail_rank1: bool = False):
    for rank in (0, 1):
        wd = Watchdog(run_dir, rank, world=2, heartbeat_s=60).start({"model": "tiny"})
        for step in range(1, 4):
            wd.phase("forward", step)
            wd.step(step, loss=5.0 - step, step_time=0.25 + rank, data_wait=0.01)
        if fail_rank1 and rank == 1:
            wd.exception(RuntimeError("For 'MatMul' the input dimensions must be equal"))
            wd.close("failed")
        else:
            wd.close("ok")


def test_state_folds_events_per_rank(tmp_path):
    write_run(tmp_path, fail_rank1=True)
    st = RunState(tmp_path, clock=lambda: 1e12)
    assert st.poll() is True
    assert sorted(st.ranks) == [0, 1]
    r0, r1 = st.ranks[0], st.ranks[1]
    assert (r0.status, r0.step, r0.loss, r0.step_ms) == ("ended", 3, 2.0, 250.0)
    assert r1.status == "failed" and "MatMul" in r1.where
    assert st.poll() is False  # nothing new: offsets advanced


def test_rank_without_events_for_a_while_is_shown_silent(tmp_path):
    wd = Watchdog(tmp_path, 0, world=1, heartbeat_s=60).start()
    wd.step(1, loss=1.0)  # no close(): the process was killed
    st = RunState(tmp_path)
    st.poll()
    row = st.ranks[0]
    assert row.shown_status(row.last_seen + 2) == "running"
    assert row.shown_status(row.last_seen + 30) == "silent"


def test_state_skips_garbage_and_counts_it(tmp_path):
    write_run(tmp_path)
    with open(tmp_path / "events" / "rank_0.jsonl", "ab") as fh:
        fh.write(b"\x00\xffnot json\n[1,2]\n")
    st = RunState(tmp_path)
    st.poll()
    assert st.skipped_lines == 2 and st.ranks[0].step == 3


def test_findings_deduplicated_by_rule_and_rank(tmp_path):
    write_run(tmp_path)
    f = {"rule": "COMM201", "severity": "error", "rank": 1, "step": 3, "message": "rank 1 stopped"}
    with open(tmp_path / "findings.jsonl", "wb") as fh:
        fh.write(orjson.dumps(f) + b"\n")
        fh.write(orjson.dumps({**f, "message": "rank 1 stopped at train.py:42"}) + b"\n")
    st = RunState(tmp_path)
    st.poll()
    assert len(st.findings) == 1 and st.findings[0]["message"].endswith("train.py:42")


def test_retracted_finding_disappears(tmp_path):
    write_run(tmp_path)
    f = {"rule": "COMM201", "severity": "error", "rank": None, "step": 3, "message": "a rank stopped"}
    with open(tmp_path / "findings.jsonl", "wb") as fh:
        fh.write(orjson.dumps(f) + b"\n")
        fh.write(orjson.dumps({**f, "retracted": True}) + b"\n")
        fh.write(orjson.dumps({**f, "rank": 1, "message": "rank 1 stopped"}) + b"\n")
    st = RunState(tmp_path)
    st.poll()
    assert [(x["rank"], x["message"]) for x in st.findings] == [(1, "rank 1 stopped")]


def test_app_shows_ranks_and_findings_live(tmp_path):
    write_run(tmp_path)

    async def scenario():
        app = make_app(tmp_path, poll_s=0.05, clock=lambda: 1e12)
        async with app.run_test(size=(140, 30)) as pilot:
            await pilot.pause(0.3)
            ranks = app.query_one("#ranks")
            assert ranks.row_count == 2
            assert ranks.get_cell("rank-1", "step") == "3"
            assert ranks.get_cell("rank-1", "status") == "ended"
            # a finding appended while the app runs shows up without a restart
            with open(tmp_path / "findings.jsonl", "ab") as fh:
                fh.write(orjson.dumps({"rule": "PERF201", "severity": "warning", "rank": 1, "step": 3,
                                       "message": "rank 1 is 4x slower than rank 0"}) + b"\n")
            await pilot.pause(0.3)
            findings = app.query_one("#findings")
            assert findings.row_count == 1
            assert findings.get_cell("f-PERF201-1", "rule") == "PERF201"
            with open(tmp_path / "findings.jsonl", "ab") as fh:
                fh.write(orjson.dumps({"rule": "PERF201", "severity": "warning", "rank": 1, "retracted": True}) + b"\n")
            await pilot.pause(0.3)
            assert findings.row_count == 0
            await pilot.press("p")
            assert app.paused is True
            await pilot.press("q")

    asyncio.run(scenario())


def test_monitor_cli_missing_dir_is_one_line(cli, tmp_path):
    r = cli("monitor", str(tmp_path / "nope"))
    assert r.rc == 2 and r.err.count("\n") == 1 and "no such run directory" in r.err
