"""The monitor app driven by Textual's pilot over recorded run directories: data, drill-down, keys."""

from __future__ import annotations

import asyncio

import orjson

from msdoctor.tui.app import MonitorApp, make_app
from msdoctor.tui.screens import FindingScreen, HelpScreen, JumpScreen, RankScreen
from msdoctor.tui.widgets import RankTable
from tests.tui.conftest import last_t, screen_text, wait_for


def run(coro):
    return asyncio.run(coro)


def app_for(run_dir, **kw) -> MonitorApp:
    t = last_t(run_dir)
    return make_app(run_dir, poll_s=0.05, clock=lambda: t + 5.0, **kw)


def test_overview_names_the_hung_rank(hang_run):
    async def scenario():
        app = app_for(hang_run)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.findings)
            snap = app.snapshot
            table = app.query_one("#ranks", RankTable)
            assert [r.rank for r in table.rows] == [0, 1]
            assert snap.culprit == 1 and snap.root_rule == "COMM201"
            assert [(r.rank, r.shown_status(app.clock()), r.step) for r in snap.ranks] == [(0, "failed", 3), (1, "running", 3)]
            text = screen_text(app)
            culprit_line = next(s for s in text.splitlines() if s.startswith(app.glyphs.culprit))
            assert culprit_line.split()[1:4] == ["1", "running", "3"] and "train.py:270 train" in culprit_line
            assert "culprit: rank 1 (COMM201)" in text and "2 err 0 warn 0 info" in text
            findings = app.query_one("#findings")
            assert findings.row_count == 2
            assert [str(findings.get_row_at(i)[1]) for i in range(2)] == ["COMM201", "COMM203"]

    run(scenario())


def test_enter_on_a_finding_opens_evidence_stack_fix_and_explain(hang_run):
    async def scenario():
        app = app_for(hang_run)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.findings)
            await pilot.press("tab")  # rank table -> findings
            assert app.focused.id == "findings"
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, FindingScreen))
            screen = app.screen
            assert screen.finding.rule == "COMM201" and screen.finding.rank == 1
            stack = str(screen.query_one("#finding-stack").render())
            # the thread that was running (where the rank is stuck) first, the watchdog's thread after
            assert stack.startswith("Stack of rank 1\nCurrent thread") and 'train.py", line 270 in train' in stack
            assert "in _beat" in stack
            text = " ".join(str(w.render()) for w in screen.query(".section"))
            assert "rank 1: no progress since" in text  # evidence
            assert "Fix the code at the culprit's stack top" in text  # fix
            assert "**What it detects.**" in text  # the rule's explain text
            await pilot.press("r")  # from the finding to its rank
            await wait_for(pilot, lambda: isinstance(app.screen, RankScreen))
            assert app.screen.rank == 1
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, FindingScreen))
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, FindingScreen))
            assert app.query_one("#ranks")  # back on the overview

    run(scenario())


def test_enter_on_a_rank_opens_its_detail_and_the_log_search(hang_run):
    log = (hang_run / "logs" / "worker_1.log").read_text().splitlines()
    want = [s for s in log if "grad_norm" in s]
    assert want  # the recorded log has the trainer's per-step lines

    async def scenario():
        app = app_for(hang_run)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None)
            await pilot.press("down", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, RankScreen))
            screen = app.screen
            assert screen.rank == 1
            events = screen.query_one("#rank-events").lines
            assert any("heartbeat" in s and "phase=collective" in s for s in events)
            assert "line 270 in train" in str(screen.query_one("#rank-stack-text").render())
            await pilot.press("slash")
            await pilot.press(*"grad_norm", "enter")
            assert screen.matches == len(want)
            assert list(screen.query_one("#rank-log").lines) == want
            await pilot.press("n")  # all lines again, the count kept
            assert len(screen.query_one("#rank-log").lines) == len(log)
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, RankScreen))

    run(scenario())


def test_keys_pause_sort_filter_jump_help(hang_run):
    async def scenario():
        app = app_for(hang_run)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.findings)
            table = app.query_one("#ranks", RankTable)
            # pause: new data is read but not shown until resumed
            await pilot.press("p")
            assert app.paused and "PAUSED" in screen_text(app)
            with open(hang_run / "findings.jsonl", "ab") as fh:
                fh.write(orjson.dumps({"rule": "PERF201", "severity": "warning", "rank": 0, "step": 3,
                                       "message": "rank 0 is slow"}) + b"\n")
            await wait_for(pilot, lambda: len(app.latest.findings) == 3)
            assert len(app.snapshot.findings) == 2
            await pilot.press("p")
            assert not app.paused and len(app.snapshot.findings) == 3
            # sort: rank -> straggler (descending)
            await pilot.press("s")
            by_score = sorted(app.snapshot.ranks, key=lambda r: r.straggler, reverse=True)
            assert table.sort_key == "straggler" and [r.rank for r in table.rows] == [r.rank for r in by_score]
            await pilot.press("s")  # step time, descending: rank 1's last step took 740 ms, rank 0's 296 ms
            assert table.sort_key == "step_ms" and [r.rank for r in table.rows] == [1, 0]
            # filter findings by severity: all -> error -> warning
            await pilot.press("f")
            assert app.query_one("#findings").row_count == 2
            await pilot.press("f")
            assert app.query_one("#findings").row_count == 1
            # jump to a rank
            await pilot.press("j")
            await wait_for(pilot, lambda: isinstance(app.screen, JumpScreen))
            await pilot.press("0", "enter")
            await wait_for(pilot, lambda: not isinstance(app.screen, JumpScreen))
            assert table.cursor_rank == 0
            # help lists every key of the footer
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            help_text = str(app.screen.query_one("#help-text").render())
            for key in ("q", "p", "s", "f", "j", "/", "?", "enter", "escape"):
                assert f"  {key} " in help_text
            await pilot.press("escape")
            await pilot.press("q")

    run(scenario())


def test_command_palette_lists_the_keys(hang_run):
    async def scenario():
        app = app_for(hang_run)
        async with app.run_test(size=(80, 24)):
            titles = [c.title for c in app.get_system_commands(app.screen)]
            for key in ("[p]", "[s]", "[f]", "[j]", "[/]", "[?]", "[q]"):
                assert any(t.endswith(key) for t in titles), key
            assert "Sort ranks by straggler" in titles

    run(scenario())


def test_markup_and_control_characters_from_input_are_shown_literally(hang_run):
    nasty = "[/x] [bold]boom[/bold] \x1b[31mred\x1b[0m \x07bell [link=file:///etc]x"
    with open(hang_run / "findings.jsonl", "ab") as fh:
        fh.write(orjson.dumps({"rule": "NUM201", "severity": "error", "rank": 0, "step": 2, "message": nasty,
                               "title": nasty, "fix": nasty, "evidence": [{"text": nasty}]}) + b"\n")

    async def scenario():
        app = app_for(hang_run)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None and len(app.snapshot.findings) == 3)
            text = screen_text(app)
            assert "[/x] [bold]boom[/bold] red bell [link=file:///etc]x" in text
            app.query_one("#findings").focus()
            await pilot.press("down", "down", "enter")  # errors by rule: COMM201, COMM203, NUM201
            await wait_for(pilot, lambda: isinstance(app.screen, FindingScreen))
            assert app.screen.finding.rule == "NUM201"
            shown = screen_text(app)
            assert "[/x] [bold]boom[/bold]" in shown and "\x1b" not in shown and "\x07" not in shown

    run(scenario())


def test_live_updates_while_the_app_runs(tmp_path):
    from tests.tui.test_monitor import write_run

    write_run(tmp_path)

    async def scenario():
        app = make_app(tmp_path, poll_s=0.05, clock=lambda: 1e12)
        async with app.run_test(size=(140, 30)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None)
            assert [r.step for r in app.snapshot.ranks] == [8, 8]
            with open(tmp_path / "findings.jsonl", "ab") as fh:
                fh.write(orjson.dumps({"rule": "PERF201", "severity": "warning", "rank": 1, "step": 3,
                                       "message": "rank 1 is 4x slower than rank 0"}) + b"\n")
            await wait_for(pilot, lambda: app.query_one("#findings").row_count == 1)
            with open(tmp_path / "findings.jsonl", "ab") as fh:
                fh.write(orjson.dumps({"rule": "PERF201", "severity": "warning", "rank": 1, "retracted": True}) + b"\n")
            await wait_for(pilot, lambda: app.query_one("#findings").row_count == 0)

    run(scenario())


def test_ascii_terminal_gets_only_ascii(hang_run):
    async def scenario():
        app = app_for(hang_run, ascii_only=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.findings)
            for tab in ("1", "2", "3"):
                await pilot.press(tab)
                await pilot.pause(0.1)
                text = screen_text(app)
                bad = [s for s in text.splitlines() if not s.isascii()]
                assert not bad, f"tab {tab}: {bad}"

    run(scenario())


def test_heat_strip_and_plots_show_the_straggler(straggler_run):
    async def scenario():
        app = app_for(straggler_run)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.findings)
            assert app.snapshot.culprit == 1 or 1 in app.snapshot.stragglers
            await pilot.press("2")
            await pilot.pause(0.2)
            heat = app.query_one("#heat")
            text = screen_text(app)
            assert heat.last_step == 8
            assert "steps 1..8" in text
            await pilot.press("3")
            await pilot.pause(0.2)
            rows = app.query_one("#plots").lines_for(160)
            labels = [label.strip() for label, _, _ in rows]
            for title in ("loss: all (median)", "grad norm: all (median)", "loss scale: all (median)",
                          "step ms: all (median)", "work ms: all (median)"):
                assert title in labels
            assert "rank 1 (slowest)" in labels

    run(scenario())


def test_a_finished_run_replayed(hang_run):
    async def scenario():
        app = make_app(hang_run, poll_s=0.05, replay_speed=1000.0)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.replay.done and app.snapshot is not None and app.snapshot.findings)
            await wait_for(pilot, lambda: "replay x1000 (done)" in screen_text(app))
            assert app.snapshot.culprit == 1 and [r.step for r in app.snapshot.ranks] == [3, 3]

    run(scenario())


def test_d_asks_a_live_rank_for_its_stack(tmp_path):
    from msdoctor.watch.watchdog import Watchdog

    wd = Watchdog(tmp_path, 0, world=1, heartbeat_s=60).start()  # this process plays rank 0
    wd.step(1, loss=1.0, step_time=0.1)
    try:
        async def scenario():
            app = make_app(tmp_path, poll_s=0.05)
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.ranks)
                await pilot.press("enter")
                await wait_for(pilot, lambda: isinstance(app.screen, RankScreen))
                assert "no stack dump" in str(app.screen.query_one("#rank-stack-text").render())
                await pilot.press("d")  # SIGUSR1 to this process: its faulthandler writes the dump
                await wait_for(pilot, lambda: "Current thread" in str(app.screen.query_one("#rank-stack-text").render()))
                stack = str(app.screen.query_one("#rank-stack-text").render())
                assert stack.startswith("Current thread") and "in request_stack" in stack  # where the signal arrived

        run(scenario())
    finally:
        wd.close("ok")


def test_stack_requests_only_go_to_live_local_ranks_of_their_own_pid():
    import os
    import socket
    import time

    from msdoctor.tui.source import request_stack

    me, host = os.getpid(), socket.gethostname()
    assert request_stack(0, "ended", me, host, time.time())[1] == "rank 0 has ended: no process to ask for a stack"
    ok, msg = request_stack(0, "running", me, "elsewhere", time.time())
    assert not ok and msg == f"rank 0 runs on elsewhere: run `kill -USR1 {me}` there"
    ok, msg = request_stack(0, "running", me, host, 1.0)  # started long before this process: pid reused
    assert not ok and "now belongs to another process" in msg


def test_a_failing_read_is_shown_and_retried(hang_run, monkeypatch):
    from msdoctor.tui import state as state_mod

    # Reads fail until the test has seen the error on screen, then succeed: a fixed count of failures let a
    # loaded host's UI thread fold the failures and the good read between two of the test's looks (CI failed it).
    readable = [False]
    real = state_mod.RunState.poll

    def flaky(self):
        if not readable[0]:
            raise PermissionError(13, "Permission denied", "events/rank_0.jsonl")
        return real(self)

    monkeypatch.setattr(state_mod.RunState, "poll", flaky)

    async def scenario():
        app = app_for(hang_run)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.read_error is not None)
            assert "PermissionError" in app.read_error
            readable[0] = True
            await wait_for(pilot, lambda: app.snapshot is not None and app.read_error is None)
            assert [r.rank for r in app.snapshot.ranks] == [0, 1]

    run(scenario())
