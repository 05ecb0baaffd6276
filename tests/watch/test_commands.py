"""`msdoctor watch` and `msdoctor report` as a user runs them (subprocesses, stdout and stderr apart)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from msdoctor.rundir import LOCK_FILE

FAKE = Path(__file__).with_name("fakeloop.py")


def test_bad_run_dirs_are_one_line_exit_2(cli, tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty" / "events").mkdir(parents=True)
    (tmp_path / "zero" / "events").mkdir(parents=True)
    (tmp_path / "zero" / "events" / "rank_0.jsonl").write_bytes(b"")
    for cmd in ("watch", "report"):
        for name, why in (("missing", "no such run directory"), ("file", "not a directory"),
                          ("empty", "no event files"), ("zero", "event files are empty")):
            r = cli(cmd, str(tmp_path / name))
            assert r.rc == 2 and r.out == "", (cmd, name, r.err)
            assert len(r.err.strip().splitlines()) == 1 and why in r.err and "Traceback" not in r.err


def test_garbage_lines_are_skipped_and_reported(cli, finished_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished_run("nan"), run)
    with open(run / "events" / "rank_1.jsonl", "ab") as fh:
        fh.write(b"\x00\xff binary garbage\n[1, 2]\n{\"truncated\": \n{\"t\": 1, \"kind\": \"st")
    r = cli("report", str(run), "--json")
    assert r.rc == 1
    payload = r.json()
    assert [(f["rule"], f["rank"], f["step"]) for f in payload["findings"]] == [("NUM201", 1, 7)]
    assert payload["skipped"] == [
        f"{run / 'events' / 'rank_1.jsonl'}: 3 unreadable event line(s) skipped (3 × an event of unknown kind)",
        f"{run / 'events' / 'rank_1.jsonl'}: incomplete last line (20 bytes) ignored: an event of unknown kind lost",
    ]
    assert "3 unreadable event line(s)" in r.err


def test_report_json_contract_timeline_root_cause(cli, finished_run):
    r = cli("report", str(finished_run("exception")), "--json")
    assert r.rc == 1
    p = r.json()
    assert p["command"] == "report" and p["not_evaluated"] == []
    assert p["root_cause"]["rank"] == 1 and p["root_cause"]["rule"] == "COMM203"
    assert p["timeline"][0]["rank"] == 1
    assert {r["rank"]: r["status"] for r in p["ranks"]} == {0: "failed", 1: "failed"}
    for f in p["findings"]:
        assert {"rule", "severity", "title", "rank", "step", "evidence", "fix"} <= set(f)


def test_clean_run_text_and_exit_0(cli, finished_run):
    r = cli("watch", str(finished_run("clean")))
    assert r.rc == 0 and "no findings" in r.out and "0 ok (step 30)" in r.out


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_watch_follow_live_until_ranks_end(cli, tmp_path, fmt):
    run = tmp_path / "run"
    go = tmp_path / "go"
    # the ranks step only once the watch holds the run (its lock file): on a loaded host the 1-s run could
    # otherwise end before `watch` has started, and a finished run is followed read-only (no findings.jsonl)
    procs = [subprocess.Popen([sys.executable, str(FAKE), str(run), str(r), "2", "datastall", "25"],
                              env=dict(os.environ, FAKE_HOLD_UNTIL=str(go)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for r in range(2)]

    def open_gate() -> None:
        deadline = time.monotonic() + 90
        while not (run / LOCK_FILE).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()

    gate = threading.Thread(target=open_gate, daemon=True)
    gate.start()
    try:
        (run / "events").mkdir(parents=True, exist_ok=True)
        while not (run / "events" / "rank_0.jsonl").exists():
            time.sleep(0.01)
        r = cli("watch", str(run), "--follow", "--timeout", "60", "--poll", "0.2", *(["--json"] if fmt == "json" else []),
                env=dict(os.environ, COLUMNS="200"))
    finally:
        go.touch()
        for p in procs:
            p.kill()
    assert r.rc == 0, r.err  # DATA201 is a warning
    if fmt == "json":
        assert [(f["rule"], f["rank"]) for f in r.json()["findings"]] == [("DATA201", 1)]
    else:
        assert r.out.index("DATA201") < r.out.index("— run ended —")  # printed live, before the end
    assert (run / "findings.jsonl").exists()


def test_watch_follow_timeout_on_a_run_that_does_not_end(cli, tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, str(FAKE), str(run), "0", "2", "clean", "30"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, FAKE_BARRIER_TIMEOUT="60"))  # rank 1 never comes
    try:
        while not (run / "events" / "rank_0.jsonl").exists():
            pass
        r = cli("watch", str(run), "--follow", "--timeout", "1", "--json")
    finally:
        proc.kill()
    assert r.rc == 0 and "stopped following after --timeout 1 s" in r.err
    assert r.json()["ranks"][0]["status"] == "running"


def test_watch_and_report_do_not_import_mindspore(finished_run):
    code = (
        "import sys; from msdoctor.cli import main; "
        f"rc = main(['report', {str(finished_run('nan'))!r}, '--json']); "
        "assert 'mindspore' not in sys.modules, 'mindspore imported'; sys.exit(rc)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and '"NUM201"' in r.stdout, r.stderr


def test_event_files_without_one_readable_line_are_exit_2_not_an_empty_report(cli, tmp_path):
    # Before: "✓ no findings … ranks: 0 unknown (step None)" and exit 0 over a file of garbage.
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    (run / "events" / "rank_0.jsonl").write_bytes(b"\x00\xff binary garbage\n[1, 2]\n" * 50)
    for cmd in ("watch", "report"):
        r = cli(cmd, str(run))
        assert r.rc == 2 and r.out == "", (cmd, r.out, r.err)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and "no readable event" in lines[0] and "100 unreadable" in lines[0], r.err


def test_a_rank_without_a_step_is_shown_as_such_not_step_none(cli, tmp_path):
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    (run / "events" / "rank_0.jsonl").write_text('{"t": 1.0, "rank": 0, "kind": "start", "world": 1}\n')
    r = cli("report", str(run))
    assert r.rc == 0, r.err
    assert "ranks: 0 unknown (no step)" in r.out and "step None" not in r.out


def test_follow_on_a_finished_supervised_run_keeps_what_its_supervisor_did(cli, finished_run, tmp_path):
    import json

    run = tmp_path / "run"
    shutil.copytree(finished_run("clean"), run)
    (run / "supervisor.json").write_text(json.dumps({
        "stopped_by_supervisor": True, "stack_requested": {"1": 12.5}, "hang_named_at": 10.0,
        "actions": ["stopped the job (ranks [0, 1]) after naming the hung rank"], "hook_errors": []}))
    r = cli("watch", str(run), "--follow", "--timeout", "20", "--json")
    assert r.rc in (0, 1), r.err
    state = json.loads((run / "supervisor.json").read_text())
    assert state["stopped_by_supervisor"] is True and state["stack_requested"] == {"1": 12.5}
    assert state["hang_named_at"] == 10.0
    assert state["actions"][0] == "stopped the job (ranks [0, 1]) after naming the hung rank"
