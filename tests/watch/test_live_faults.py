"""Faults of a live run and the honesty of its closing report (issues 13.4 and 16.6)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

from msdoctor import rundir
from msdoctor.engine.evaluate import Evaluation
from msdoctor.engine.model import Finding, Severity
from msdoctor.watch import supervisor as supmod
from msdoctor.watch.diagnosis import root_cause
from msdoctor.watch.report import diagnose_dir
from msdoctor.watch.supervisor import SuperviseOptions, Supervisor
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]


def _write(run: Path, rank: int, evs: list[dict]) -> None:
    path = rundir.rank_file(run, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fh:
        fh.write(b"".join(orjson.dumps(dict(e, rank=rank)) + b"\n" for e in evs))


def _killed_after_a_short_stall(run: Path) -> None:
    """Two ranks stopped by the supervisor: rank 1 made no progress for 4.89 s before the kill (under the
    5 s threshold post-mortem), rank 0 waited in the collective."""
    for r in (0, 1):
        evs = [{"t": 0.0, "kind": "start", "world": 2, "host": "elsewhere", "heartbeat_s": 1.0}]
        evs += [{"t": float(s), "kind": "step", "step": s, "step_time": 1.0} for s in (1, 2, 3)]
        evs.append({"t": 3.1, "kind": "phase", "step": 4, "phase": "collective" if r == 0 else "data"})
        evs += [{"t": 3.1 + 0.5 * i, "kind": "heartbeat", "step": 3, "phase_step": 4,
                 "phase": "collective" if r == 0 else "data"} for i in range(1, 10)]  # last seen 7.6 s
        _write(run, r, evs)
    (run / rundir.SUPERVISOR_FILE).write_text('{"stopped_by_supervisor": true, "stack_requested": {}}')


def _hang_line(rank: int | None, **kw) -> dict:
    return {"rule": "COMM201", "severity": "error", "title": "A rank hung", "message": f"rank {rank} hung",
            "rank": rank, "step": 4, "evidence": [], "cause": "", "fix": "", "data": {"t": 3.1}, **kw}


def test_closing_report_keeps_the_hang_the_supervisor_named(tmp_path):
    # Before: report re-judged the stall after the kill (4.89 s < 5 s) and printed "✓ no findings".
    _killed_after_a_short_stall(tmp_path)
    (tmp_path / rundir.FINDINGS_FILE).write_bytes(orjson.dumps(_hang_line(1, t=9.0, first_seen=9.0)) + b"\n")
    diag = diagnose_dir(tmp_path)
    assert [(f.rule, f.rank) for f in diag.findings] == [("COMM201", 1)]
    assert (diag.root_cause.rule, diag.root_cause.rank) == ("COMM201", 1)
    r = run_cli("report", str(tmp_path), env=dict(os.environ, COLUMNS="200"))
    assert r.rc == 1 and "COMM201" in r.out and "root cause: COMM201 on rank 1" in r.out, r.out


def test_a_retraction_in_findings_jsonl_is_honoured_by_the_report(tmp_path):
    _killed_after_a_short_stall(tmp_path)
    lines = [_hang_line(None), dict(_hang_line(None), retracted=True), _hang_line(1)]
    (tmp_path / rundir.FINDINGS_FILE).write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    assert [(f.rule, f.rank) for f in diagnose_dir(tmp_path).findings] == [("COMM201", 1)]


def _finding(rule: str, rank: int | None, t: float, role: str | None = None) -> Finding:
    data: dict = {"t": t}
    if role:
        data["role"] = role
    return Finding(rule=rule, severity=Severity.ERROR, title=rule, message=f"{rule} on {rank}", cause="", fix="",
                   rank=rank, step=4, data=data)


def test_the_culprit_stays_when_the_peers_later_stop_too(tmp_path, monkeypatch):
    # Before: once the waiting rank died of its own collective time-out, the next round ("all 2 ranks
    # stopped … none is behind", rank None) retracted the culprit; report.json named no rank.
    _killed_after_a_short_stall(tmp_path)
    rounds = iter([[_finding("COMM201", 1, 3.1)],
                   [_finding("COMM201", None, 3.1), _finding("COMM203", 0, 40.0)]])
    monkeypatch.setattr(supmod, "run_checks", lambda rules, facts: Evaluation(findings=next(rounds)))
    sup = Supervisor(tmp_path, SuperviseOptions())
    sup.poll(running=None)
    sup.poll(running=None)
    assert [(f.rule, f.rank) for f in sup.current()] == [("COMM201", 1), ("COMM203", 0)]
    lines = [orjson.loads(x) for x in (tmp_path / rundir.FINDINGS_FILE).read_bytes().splitlines()]
    assert not any(x.get("retracted") for x in lines) and all(x["rank"] is not None for x in lines)
    rc = root_cause(sup.current())
    assert (rc.rule, rc.rank) == ("COMM201", 1) and [(c.rule, c.rank) for c in rc.consequences] == [("COMM203", 0)]


def test_follow_of_a_finished_run_appends_nothing(tmp_path, finished_run):
    run = tmp_path / "run"
    shutil.copytree(finished_run("nan"), run)
    first = run_cli("report", str(run), "--json").json()["findings"]
    (run / rundir.FINDINGS_FILE).write_bytes(b"".join(orjson.dumps(f) + b"\n" for f in first))
    before = (run / rundir.FINDINGS_FILE).read_bytes()
    r = run_cli("watch", str(run), "--follow", "--timeout", "20", "--json")
    assert r.rc == 1, r.err
    assert (run / rundir.FINDINGS_FILE).read_bytes() == before
    assert [(f["rule"], f["rank"]) for f in r.json()["findings"]] == [("NUM201", 1)]


def test_watch_follow_waits_for_the_first_events(tmp_path):
    # Before: `watch --follow` started before the ranks wrote anything exited 2 ("no event files").
    run = tmp_path / "run"
    run.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "msdoctor", "watch", str(run), "--follow", "--timeout", "60",
                             "--poll", "0.1", "--json"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # the first line on stderr says it waits (read, not slept for: on a loaded host the start alone can take
        # longer than a fixed sleep, and events written before it looks are not "first events" it waited for);
        # the command's own --timeout bounds the read
        first = proc.stderr.readline()
        assert proc.poll() is None, first  # still waiting
        for r in (0, 1):
            _write(run, r, [{"t": 1.0, "kind": "start", "world": 2, "host": "elsewhere"},
                            {"t": 2.0, "kind": "step", "step": 1, "loss": 1.0},
                            {"t": 3.0, "kind": "end", "step": 1, "status": "ok"}])
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert b"waiting for the ranks' first events" in first
    assert [r["status"] for r in orjson.loads(out)["ranks"]] == ["ok", "ok"]


def test_watch_follow_with_no_events_until_timeout_is_one_line_exit_2(tmp_path):
    r = run_cli("watch", str(tmp_path), "--follow", "--timeout", "1", "--poll", "0.2")
    assert r.rc == 2 and "no rank wrote an event within --timeout 1 s" in r.err and "Traceback" not in r.err


_LOCKER = """
import sys, time
from pathlib import Path
from msdoctor.watch.supervisor import _take_lock
got = _take_lock(Path(sys.argv[1]))
print("got" if got is not None else "none", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_two_supervisors_never_both_hold_the_findings_lock(tmp_path):
    for i in range(6):
        run = tmp_path / f"r{i}"
        run.mkdir()
        procs = [subprocess.Popen([sys.executable, "-c", _LOCKER, str(run), "1.5"], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True) for _ in range(2)]
        outs = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
        assert outs == ["got", "none"], (i, outs)


def test_the_lock_of_a_supervisor_killed_with_sigkill_is_taken_over(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", _LOCKER, str(tmp_path), "60"], cwd=ROOT, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline().strip() == "got"
    finally:
        p.kill()
        p.wait()
    assert (tmp_path / rundir.LOCK_FILE).exists()  # left behind by the SIGKILL …
    fd = supmod._take_lock(tmp_path)  # … and taken over: the kernel dropped the dead holder's flock
    assert fd is not None
    supmod._release_lock(tmp_path, fd)
    assert not (tmp_path / rundir.LOCK_FILE).exists()


def test_a_hung_hook_is_killed_with_its_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    cmd = f"sleep 300 & echo $! > {pidfile}; cat >/dev/null; sleep 300"
    err = supmod._run_in_group(cmd, b"{}", timeout=1.0)
    assert err is not None and "timed out" in err and "killed its process group" in err
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)  # the hook's own child went with it


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie not yet reaped by init counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_crash_is_blamed_on_the_rank_msrun_saw_fail_first(tmp_path):
    # Under load rank 0 (slower) was still in step 4 when rank 1 exited at the start of step 5; msrun
    # then SIGKILLed rank 0. Before, COMM202 named rank 0: the rank furthest behind.
    import socket

    host = socket.gethostname()
    pids = {0: _dead_pid(), 1: _dead_pid()}
    for r, last in ((0, 3), (1, 4)):
        evs = [{"t": 0.0, "kind": "start", "world": 2, "host": host, "pid": pids[r], "heartbeat_s": 1.0}]
        evs += [{"t": float(s), "kind": "step", "step": s, "step_time": 1.0} for s in range(1, last + 1)]
        evs.append({"t": last + 0.1, "kind": "phase", "step": last + 1, "phase": "forward"})
        _write(tmp_path, r, evs)
    before = [(f.rule, f.rank) for f in diagnose_dir(tmp_path).findings if f.rule == "COMM202"]
    assert before == [("COMM202", 0)]  # without the launcher's word, the rank behind is all there is
    # msrun's real console (samples/logs/nan, MindSpore 2.10), with the worker pid of this run put in
    real = (ROOT / "samples/logs/nan/logs/msrun.log").read_text()
    line = next(x for x in real.splitlines() if "exit with exception. Error code" in x)
    (tmp_path / rundir.LAUNCHER_LOG).write_text(re.sub(r"Worker process \d+", f"Worker process {pids[1]}", line) + "\n")
    crash = [f for f in diagnose_dir(tmp_path).findings if f.rule == "COMM202"]
    assert [(f.rank, f.step) for f in crash] == [(1, 5)]
    assert "exited with code 1" in crash[0].message and "msrun saw it fail first" in crash[0].message


def test_merge_keeps_live_ranks_and_adds_only_agreeing_post_mortem_ones():
    from msdoctor.watch.diagnosis import merge

    live = {("COMM201", 1): _finding("COMM201", 1, 3.1).to_dict(), ("COMM203", 1): _finding("COMM203", 1, 5.0).to_dict()}
    post = [_finding("COMM201", None, 3.1), _finding("COMM201", 0, 3.0),  # disagrees: rank 1 not named
            _finding("COMM203", 1, 5.0), _finding("COMM203", 0, 9.0),  # agrees, adds the peer's exception
            _finding("NUM201", 0, 2.0)]  # a rule the supervisor never named
    got, bad = merge(post, live)
    assert sorted((f.rule, f.rank) for f in got) == [("COMM201", 1), ("COMM203", 0), ("COMM203", 1), ("NUM201", 0)]
    assert bad == []
