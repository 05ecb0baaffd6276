"""The supervisor killed with SIGKILL leaves no orphaned ranks (issue 16.6).

Before, `kill -9` of `msdoctor train` left msrun and both ranks running and run.json "running" forever:
msrun starts each worker in its own process group, so nothing tied them to the supervisor.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# a launcher like msrun: workers in their own sessions/process groups, waits for them
LAUNCHER = textwrap.dedent("""
    import subprocess, sys, time
    ws = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
          for _ in range(2)]
    open(sys.argv[1], "w").write(" ".join(str(w.pid) for w in ws))
    for w in ws:
        w.wait()
""")

# the supervisor: starts the launcher under the reaper, as msdoctor train does, then waits
SUPERVISOR = textwrap.dedent("""
    import os, subprocess, sys
    proc = subprocess.Popen([sys.executable, "-m", "msdoctor.watch.reaper", str(os.getpid()), "--run-dir", sys.argv[3],
                             "--", sys.executable, "-c", sys.argv[1], sys.argv[2]], start_new_session=True)
    print(proc.pid, flush=True)
    proc.wait()
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids: list[int], timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_sigkill_of_the_supervisor_ends_launcher_and_ranks(tmp_path):
    pidfile = tmp_path / "workers"
    (tmp_path / "run.json").write_text('{"status": "running"}')
    sup = subprocess.Popen([sys.executable, "-c", SUPERVISOR, LAUNCHER, str(pidfile), str(tmp_path)], cwd=ROOT,
                           stdout=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        reaper = int(sup.stdout.readline())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (pidfile.exists() and pidfile.read_text().strip()):
            time.sleep(0.05)
        workers = [int(x) for x in pidfile.read_text().split()]
        assert all(_alive(p) for p in workers)
        sup.send_signal(signal.SIGKILL)
        sup.wait()
        assert _wait_gone([*workers, reaper]) == []
        # the run directory says what happened: not "running" forever, and the kills were the supervisor's side
        assert json.loads((tmp_path / "run.json").read_text())["status"] == "supervisor died"
        state = json.loads((tmp_path / "supervisor.json").read_text())
        assert state["stopped_by_supervisor"] is True and "died" in state["actions"][-1]
    finally:
        for p in workers:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        if sup.poll() is None:
            sup.kill()


def test_the_reaper_passes_the_launchers_status_and_sigterm_on(tmp_path):
    r = subprocess.run([sys.executable, "-m", "msdoctor.watch.reaper", str(os.getpid()), "--",
                        sys.executable, "-c", "import sys; sys.exit(3)"], cwd=ROOT, timeout=60)
    assert r.returncode == 3
    p = subprocess.Popen([sys.executable, "-m", "msdoctor.watch.reaper", str(os.getpid()), "--",
                          sys.executable, "-c", "import time; print('up', flush=True); time.sleep(300)"],
                         cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
