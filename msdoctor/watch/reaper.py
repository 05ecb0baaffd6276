"""A launcher's guardian: no rank outlives its supervisor, however the supervisor dies.

``python -m msdoctor.watch.reaper SUPERVISOR_PID [--run-dir RUN] -- CMD...`` runs CMD (msrun) as its child and waits
for it, exiting with its status (a signal N as 128+N). It asks the kernel for a signal when its parent —
the supervisor — dies (``PR_SET_PDEATHSIG``; checked by pid too) and adopts every orphaned descendant
(``PR_SET_CHILD_SUBREAPER``): msrun starts each worker in its own process group, so when msrun is
gone they would be re-parented to init and run on. When the supervisor dies (even by SIGKILL, which
it cannot handle), the reaper SIGKILLs the launcher and every process below it, then exits.

With ``--run-dir`` it then records in ``RUN/supervisor.json`` that the job was stopped (so ``report``
does not call the killed ranks crashed) and marks ``RUN/run.json`` "supervisor died".

SIGTERM / SIGINT from the supervisor (stopping the job) are passed on to the launcher.
Linux only; elsewhere it only runs CMD and passes signals on.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_DIED = signal.SIGUSR2


def _prctl(option: int, arg: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def kill_tree(root: int | None = None) -> list[int]:
    """SIGKILL every descendant of this process (the launcher and the ranks, adopted orphans too)."""
    try:
        import psutil
    except ImportError:
        return []
    killed = []
    try:
        procs = psutil.Process(root or os.getpid()).children(recursive=True)
    except psutil.Error:
        return []
    for p in procs:
        try:
            p.send_signal(signal.SIGKILL)
            killed.append(p.pid)
        except psutil.Error:
            continue
    psutil.wait_procs(procs, timeout=5)
    return killed


def record(run_dir: str, parent: int, killed: list[int]) -> None:
    """What happened, in the run directory: the supervisor died, the reaper stopped the job."""
    import time
    from pathlib import Path

    import orjson

    from msdoctor import rundir

    run = Path(run_dir)
    what = f"the supervisor (pid {parent}) died; msdoctor.watch.reaper killed the job (pids {killed[:20]})"
    for name, update in ((rundir.SUPERVISOR_FILE, {"stopped_by_supervisor": True}),
                         (rundir.RUN_FILE, {"status": "supervisor died", "ended": time.time()})):
        data, _ = rundir.read_json_object(run / name)
        if data is None and name == rundir.RUN_FILE:
            continue
        data = dict(data or {}, **update)
        data["actions"] = [*(a for a in data.get("actions") or [] if isinstance(a, str)), what]
        try:
            tmp = run / f".{name}.reaper"
            tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
            tmp.replace(run / name)
        except OSError:
            continue


def main(argv: list[str]) -> int:
    run_dir = None
    if len(argv) >= 3 and argv[1] == "--run-dir":
        run_dir, argv = argv[2], [argv[0], *argv[3:]]
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        print("usage: python -m msdoctor.watch.reaper SUPERVISOR_PID [--run-dir RUN] -- CMD...", file=sys.stderr)
        return 2
    parent = int(argv[0])
    cmd = argv[2:]
    state: dict[str, Any] = {"orphaned": False, "child": None}

    def on_parent_death(signum: int, frame: Any) -> None:
        state["orphaned"] = True

    def forward(signum: int, frame: Any) -> None:
        child = state["child"]
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    signal.signal(PARENT_DIED, on_parent_death)
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, int(PARENT_DIED))
    if os.getppid() != parent:  # the supervisor died before the death signal was armed
        return 137
    child = subprocess.Popen(cmd)
    state["child"] = child
    while True:
        if state["orphaned"] or os.getppid() != parent:
            killed = kill_tree()
            if run_dir is not None:
                record(run_dir, parent, killed)
            print(f"msdoctor reaper: the supervisor (pid {parent}) died; killed the job it launched",
                  file=sys.stderr)
            return 137
        try:
            code = child.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            continue
    # the launcher ended on its own: any leftovers are the supervisor's to end (it tracks them)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
