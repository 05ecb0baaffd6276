"""The supervisor around a launched job: hang → stack → stop, de-duplication, hooks, timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

from msdoctor.watch.supervisor import FINDINGS_FILE, SuperviseOptions, Supervisor, supervise

FAKE = Path(__file__).with_name("fakeloop.py")


def _launch(run_dir: Path, scenario: str, steps: int = 30, barrier_timeout: str = "60") -> subprocess.Popen[bytes]:
    run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, FAKE_BARRIER_TIMEOUT=barrier_timeout)
    return subprocess.Popen([sys.executable, str(FAKE), "launch", str(run_dir), "2", scenario, str(steps)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _lines(run_dir: Path) -> list[dict]:
    return [orjson.loads(x) for x in (run_dir / FINDINGS_FILE).read_bytes().splitlines()]


def test_hung_rank_named_with_its_stack_then_job_stopped(tmp_path):
    proc = _launch(tmp_path, "hang", barrier_timeout="60")  # rank 0 would wait 60 s: the "framework timeout"
    seen: list[tuple[float, object]] = []
    t0 = time.monotonic()
    try:
        rc = supervise(tmp_path, proc, 2, SuperviseOptions(poll_s=0.25, stop_on_hang=True,
                                                          printer=lambda f: seen.append((time.time(), f))))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert time.monotonic() - t0 < 40  # stopped long before rank 0's own 60 s timeout
    assert rc != 0
    (t_found, f), *_ = seen
    assert (f.rule, f.rank, f.step) == ("COMM201", 1, 7)
    assert t_found - f.data["t"] < 15  # from rank 1's last progress to the finding naming it
    hang = next(x for x in _lines(tmp_path) if x["rule"] == "COMM201")
    assert "hang_here" in hang["message"] or any("hang_here" in e["text"] for e in hang["evidence"])
    assert any("rank 0 waits in phase 'collective'" in e["text"] for e in hang["evidence"])
    assert "hang_here" in (tmp_path / "events" / "rank_1.stack.txt").read_text()
    state = orjson.loads((tmp_path / "supervisor.json").read_bytes())
    assert state["stopped_by_supervisor"] and "1" in state["stack_requested"]
    # ranks the supervisor killed are not reported as crashed
    assert {x["rule"] for x in _lines(tmp_path)} == {"COMM201"}
    report = orjson.loads((tmp_path / "report.json").read_bytes())  # the closing report
    assert (report["root_cause"]["rule"], report["root_cause"]["rank"]) == ("COMM201", 1)
    assert [(r["rank"], r["rule"]) for r in report["timeline"]] == [(1, "COMM201")]


def test_one_finding_per_rule_and_rank_updates_rate_limited(tmp_path):
    proc = _launch(tmp_path, "straggler", steps=60)
    sup = Supervisor(tmp_path, SuperviseOptions(update_interval_s=1000))
    try:
        while proc.poll() is None:
            sup.poll(running=True)
            time.sleep(0.05)
    finally:
        proc.kill()
    sup.poll(running=False)
    before = _lines(tmp_path)
    sup.flush()
    lines = _lines(tmp_path)
    keys = [(x["rule"], x["rank"]) for x in lines]
    assert ("PERF201", 1) in keys
    assert len(before) == len(set(keys))  # polled ~100 times, the straggler's message changing: written once
    assert keys.count(("PERF201", 1)) <= 2  # flush adds the final version only when it changed
    assert lines[-1]["first_seen"] <= lines[-1]["t"]


def test_on_finding_hook_gets_json_and_a_failing_hook_never_stops(tmp_path, capsys):
    out = tmp_path / "hook.json"
    run = tmp_path / "run"
    proc = _launch(run, "nan", steps=12)
    rc = supervise(run, proc, 2, SuperviseOptions(poll_s=0.1, on_finding=f"cat > {out}"))
    assert rc == 0
    hooked = orjson.loads(out.read_bytes())
    assert (hooked["rule"], hooked["rank"], hooked["step"]) == ("NUM201", 1, 7)

    run2 = tmp_path / "run2"
    proc = _launch(run2, "nan", steps=12)
    sup = Supervisor(run2, SuperviseOptions(poll_s=0.1, on_finding="echo broken >&2; exit 3"))
    rc = supervise(run2, proc, 2, sup.opts, sup=sup)
    assert rc == 0 and {x["rule"] for x in _lines(run2)} == {"NUM201"}
    assert sup.hook_errors and "exit 3: broken" in sup.hook_errors[0]
    assert "--on-finding hook failed for NUM201" in capsys.readouterr().err


def test_timeout_kills_the_job(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    t0 = time.monotonic()
    assert supervise(tmp_path, proc, 1, SuperviseOptions(poll_s=0.1, timeout_s=0.5)) == 124
    assert time.monotonic() - t0 < 10 and proc.poll() is not None


def test_hang_in_the_same_phase_names_the_rank_outside_the_framework(tmp_path):
    # both ranks reach phase "collective" of step 7; rank 0 blocks inside a module under mindspore/
    # (and stalls first), rank 1 hangs in the training script: rank 1 is the culprit, never rank 0
    proc = _launch(tmp_path, "hangsync", barrier_timeout="60")
    try:
        supervise(tmp_path, proc, 2, SuperviseOptions(poll_s=0.2, stop_on_hang=True))
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = _lines(tmp_path)
    assert {(x["rule"], x["rank"], x["step"]) for x in lines} == {("COMM201", 1, 7)}
    assert any("/mindspore/collective.py" in e["text"] and "rank 0 waits" in e["text"] for e in lines[0]["evidence"])


def test_crash_names_the_rank_that_died_not_the_ones_the_launcher_killed(tmp_path):
    proc = _launch(tmp_path, "crash")  # the launcher kills rank 0 once rank 1 died, like msrun
    assert supervise(tmp_path, proc, 2, SuperviseOptions(poll_s=0.2)) == 3
    lines = [x for x in _lines(tmp_path) if not x.get("retracted")]
    assert {(x["rule"], x["rank"], x["step"]) for x in lines} == {("COMM202", 1, 7)}


def test_live_findings_latest_version_and_retractions(tmp_path):
    from msdoctor.engine.model import Finding, Severity
    from msdoctor.watch.report import live_findings

    sup = Supervisor(tmp_path, SuperviseOptions(update_interval_s=0))

    def f(rank: int, msg: str) -> Finding:
        return Finding("NUM201", Severity.ERROR, "t", msg, "c", "x", rank=rank, step=3)

    sup._record(("NUM201", 0), f(0, "first"), 1.0, force=True)
    sup._record(("NUM201", 0), f(0, "second"), 2.0, force=False)  # an update: a second line
    sup._record(("NUM201", 1), f(1, "other"), 2.0, force=True)
    sup._write_line(dict(f(1, "other").to_dict(), retracted=True))
    assert len(_lines(tmp_path)) == 4
    assert [(x.rank, x.message) for x in live_findings(tmp_path)] == [(0, "second")]


def test_a_second_supervisor_follows_read_only(tmp_path, capsys):
    (tmp_path / ".supervisor.pid").write_text(str(os.getpid()))  # a live supervisor holds the run
    proc = _launch(tmp_path, "nan", steps=10)
    sup = Supervisor(tmp_path, SuperviseOptions(poll_s=0.1))
    assert supervise(tmp_path, proc, 2, sup.opts, sup=sup) == 0
    assert [(f.rule, f.rank) for f in sup.current()] == [("NUM201", 1)]  # it still diagnoses
    assert not (tmp_path / FINDINGS_FILE).exists() and not (tmp_path / "report.json").exists()
    assert "following read-only" in capsys.readouterr().err

    run2 = tmp_path / "run2"
    run2.mkdir()
    (run2 / ".supervisor.pid").write_text("999999999")  # its supervisor died: the lock is stale
    proc = _launch(run2, "nan", steps=10)
    assert supervise(run2, proc, 2, SuperviseOptions(poll_s=0.1)) == 0
    assert (run2 / FINDINGS_FILE).exists() and not (run2 / ".supervisor.pid").exists()


def test_hang_at_the_same_phase_in_user_code_is_ordered_by_the_stacks(tmp_path):
    # both ranks in phase "collective" of step 7, both in the training script (no framework frame):
    # the heartbeats cannot tell; the stacks can — rank 1 stopped at an earlier line of the same loop
    proc = _launch(tmp_path, "hangline", barrier_timeout="60")
    try:
        supervise(tmp_path, proc, 2, SuperviseOptions(poll_s=0.2, stop_on_hang=True))
    finally:
        if proc.poll() is None:
            proc.kill()
    # the tie is broken by the stacks before anything is announced: no "all ranks stopped" first
    assert {(x["rule"], x["rank"], x["step"]) for x in _lines(tmp_path)} == {("COMM201", 1, 7)}
    assert "hang_here" in (tmp_path / "events" / "rank_1.stack.txt").read_text()
    assert "barrier" in (tmp_path / "events" / "rank_0.stack.txt").read_text()  # both stacks were asked for


def test_stack_behind():
    from msdoctor.checks.run_hang import stack_behind

    r0 = ["t.py:59 _sync", "t.py:269 train", "t.py:324 main"]
    r1 = ["t.py:266 train", "t.py:324 main"]
    assert stack_behind({"0": r0, "1": r1}) == ["1"]
    assert stack_behind({"0": r0, "1": r0}) is None  # identical: nobody is behind
    assert stack_behind({"0": ["a.py:1 f", "t.py:9 main"], "1": ["b.py:1 g", "t.py:9 main"]}) is None
