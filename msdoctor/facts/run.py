"""Collector of a live or finished run: the ranks' event streams (and stack dumps) → ``run.*`` facts.

It tails ``RUN/events/rank_<r>.jsonl`` by byte offset (:meth:`RunCollector.poll`), folds what it
reads into per-rank state and hands out an immutable snapshot (:meth:`RunCollector.facts`). It never
judges and never raises: what cannot be read becomes ``Unknown`` or a skipped-lines count.

Facts (all keyed by rank as a string, because JSON object keys are strings):

* ``run.world`` — world size from the start events (else the number of rank files)
* ``run.now`` — the time the snapshot describes (wall clock live; newest event post-mortem)
* ``run.ranks`` — {rank: pid, host, local (same host as the collector), alive, started, ended,
  end_status, last_step, last_step_t, last_progress_t, last_seen_t, phase, phase_step, where,
  where_user, heartbeat_s, stack_requested_t, watchdog_errors, collective_timeout {seconds, source,
  backend} (the time-out its backend really uses, from its start event), disk_full_t / disk_full_error
  (the watchdog stopped: the disk under RUN filled up)}
* ``run.series`` — {rank: {column: [..]}} per step: step, t, loss, grad_norm, loss_scale, overflow,
  step_time, data_wait, rss, device_mem, sync (seconds in the phases that wait for the other ranks)
* ``run.checksums`` — {rank: {step: {param: [sum, sum of squares]}}} (the first 32 and newest 4 steps)
* ``run.exceptions`` — {rank: [{step, t, phase, source (the hook that recorded it), type, message, traceback}]}
* ``run.stacks`` — {rank: {t, frames: ["file:line func", …] of the main thread, innermost first}}
* ``run.host_mem`` — {total, available} bytes of the collector's host
* ``run.job`` — {running, stopped_by_supervisor} as the supervisor knows it
* ``run.disk`` — {free, total, path}: the file system under the run directory (statvfs, now)
* ``run.launcher`` — {first_failed_pid, code, line} from msrun's console (``RUN/msrun.log``): the
  worker msrun saw exit with an error first, before it killed the others
"""

from __future__ import annotations

import os
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msdoctor import rundir
from msdoctor.engine.facts import Facts
from msdoctor.rundir import SUPERVISOR_FILE, number

SOURCE = "events"
COLUMNS = ("step", "t", "loss", "grad_norm", "loss_scale", "overflow", "step_time", "data_wait", "rss", "device_mem", "sync")
# Phases in which a rank waits for the others (a straggler's peers spend its lateness here).
SYNC_PHASES = ("collective", "step", "allreduce", "train_step", "forward_backward", "sync")
MAX_POINTS = 20000  # per rank and column: bounds memory on very long runs
KEEP_CHECKSUMS = 4  # newest checksum steps kept per rank …
KEEP_FIRST_CHECKSUMS = 32  # … and the first ones, where a divergence starts
_THREAD_RE = re.compile(r"^(?:Current thread|Thread) (0x[0-9a-f]+)", re.M)
_FRAME_RE = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


@dataclass
class RankState:
    rank: int
    pid: int | None = None
    host: str | None = None
    main_thread: str | None = None
    heartbeat_s: float | None = None
    started: float | None = None
    ended: float | None = None
    end_status: str | None = None
    last_step: int | None = None
    last_step_t: float | None = None
    last_progress_t: float | None = None
    last_seen_t: float | None = None
    phase: str | None = None
    phase_step: int | None = None
    where: str | None = None
    where_user: str | None = None
    watchdog_errors: int = 0
    device_target: str | None = None
    disk_full_t: float | None = None
    disk_full_error: str | None = None
    comm_env: dict[str, str] = field(default_factory=dict)
    series: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in COLUMNS})
    checksums: dict[int, dict[str, Any]] = field(default_factory=dict)
    exceptions: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, ev: dict[str, Any]) -> None:
        t = number(ev.get("t"))
        if t is not None:
            self.last_seen_t = max(self.last_seen_t or t, t)
        kind = ev.get("kind")
        step = ev.get("step") if isinstance(ev.get("step"), int) else None
        if kind == "start":
            self.pid = ev.get("pid") if isinstance(ev.get("pid"), int) else None
            self.host = ev.get("host") if isinstance(ev.get("host"), str) else None
            self.main_thread = ev.get("main_thread") if isinstance(ev.get("main_thread"), str) else None
            self.heartbeat_s = number(ev.get("heartbeat_s"))
            self.device_target = ev.get("device_target") if isinstance(ev.get("device_target"), str) else None
            env = ev.get("comm_env")
            self.comm_env = {str(k): str(v)[:64] for k, v in env.items()} if isinstance(env, dict) else {}
            self.started, self.last_progress_t = t, t
        elif kind == "step" and step is not None:
            self.last_step, self.last_step_t, self.last_progress_t = step, t, t
            self.phase, self.phase_step = "step-done", step
            row = dict(ev, t=t)
            raw = ev.get("phases")
            phases: dict[str, Any] = raw if isinstance(raw, dict) else {}
            row["sync"] = sum(float(v) for k, v in phases.items() if k in SYNC_PHASES and isinstance(v, (int, float)))
            if not phases:
                row["sync"] = None
            for c in COLUMNS:
                col = self.series[c]
                v = row.get(c)
                col.append(v if c == "step" else _metric(v))
                if len(col) > MAX_POINTS:
                    del col[: len(col) - MAX_POINTS]
        elif kind == "phase":
            self.phase = str(ev.get("phase"))
            self.phase_step = step
            self.last_progress_t = t
        elif kind == "heartbeat":
            self.phase = str(ev.get("phase")) if ev.get("phase") is not None else self.phase
            ps = ev.get("phase_step")
            self.phase_step = ps if isinstance(ps, int) else self.phase_step
            self.where = ev.get("where") if isinstance(ev.get("where"), str) else self.where
            self.where_user = ev.get("where_user") if isinstance(ev.get("where_user"), str) else self.where_user
        elif kind == "checksum" and step is not None and isinstance(ev.get("sums"), dict):
            self.checksums[step] = ev["sums"]
            keep = sorted(self.checksums)
            for s in keep[KEEP_FIRST_CHECKSUMS:-KEEP_CHECKSUMS]:
                del self.checksums[s]
        elif kind == "exception":
            self.exceptions.append(
                {
                    "step": step,
                    "t": t,
                    "phase": ev.get("phase"),
                    "source": str(ev["source"])[:100] if isinstance(ev.get("source"), str) else None,
                    "type": str(ev.get("type", "")),
                    "message": str(ev.get("message", ""))[:4000],
                    "traceback": str(ev.get("traceback", ""))[-4000:],
                }
            )
        elif kind == "watchdog_error":
            self.watchdog_errors += 1
            if ev.get("disk_full") is True and self.disk_full_t is None:
                self.disk_full_t = t if t is not None else self.last_seen_t
                self.disk_full_error = str(ev.get("error", ""))[:300]
        elif kind == "end":
            self.ended = t
            self.end_status = str(ev.get("status", ""))


# MindSpore's CPU collectives (ring all-reduce over its RPC layer) time out after MS_CPU_COMM_OP_TIMEOUT,
# else MS_NODE_TIMEOUT, else 30 s (kCollectiveCommTimeout) — read in the MindSpore 2.10 wheel,
# include/mindspore/ccsrc/include/cluster/rpc/collective_ops_impl.h. On Ascend, HCCL_EXEC_TIMEOUT
# (CANN default 1836 s; /work/shared/faults.md HCCL-02).
CPU_COMM_TIMEOUT_S = 30.0
HCCL_EXEC_TIMEOUT_S = 1836.0


def collective_timeout(device_target: str | None, env: dict[str, str]) -> dict[str, Any]:
    """{seconds, source, backend} of the collective time-out a rank really has (seconds None: unknown)."""
    def val(name: str) -> float | None:
        try:
            return float(env[name])
        except (KeyError, ValueError):
            return None

    if device_target == "CPU":
        for name in ("MS_CPU_COMM_OP_TIMEOUT", "MS_NODE_TIMEOUT"):
            v = val(name)
            if v is not None:
                return {"seconds": v, "source": f"{name}={env[name]}", "backend": "CPU"}
        return {"seconds": CPU_COMM_TIMEOUT_S, "source": "MindSpore's CPU default", "backend": "CPU"}
    if device_target == "Ascend":
        v = val("HCCL_EXEC_TIMEOUT")
        if v is not None:
            return {"seconds": v, "source": f"HCCL_EXEC_TIMEOUT={env['HCCL_EXEC_TIMEOUT']}", "backend": "Ascend"}
        return {"seconds": HCCL_EXEC_TIMEOUT_S, "source": "HCCL_EXEC_TIMEOUT, CANN's default", "backend": "Ascend"}
    return {"seconds": None, "source": None, "backend": device_target}


# msrun (mindspore/parallel/cluster/process_entity/_api.py, join_processes) polls its workers once a
# second; the first with a non-zero exit code is logged with this line, then it SIGKILLs the others
_MSRUN_FAILED_RE = re.compile(rb"Worker process (\d+) exit with exception\. Error code: (-?\d+)\.")


def _disk(run_dir: Path) -> dict[str, Any] | None:
    """Free and total bytes of the file system under the run directory (for the user, not root)."""
    try:
        st = os.statvfs(run_dir)
    except OSError:
        return None
    return {"free": st.f_bavail * st.f_frsize, "total": st.f_blocks * st.f_frsize, "path": str(run_dir)}


def launcher_verdict(run_dir: Path) -> dict[str, Any] | None:
    """The worker msrun saw exit with an error first (its pid and code), from ``RUN/msrun.log``."""
    try:
        raw = rundir.read_tail(run_dir / rundir.LAUNCHER_LOG)
    except OSError:
        return None
    m = _MSRUN_FAILED_RE.search(raw or b"")
    if m is None:
        return None
    line_start = raw.rfind(b"\n", 0, m.start()) + 1 if raw else 0
    line = (raw or b"")[line_start:m.end()].decode("utf-8", errors="replace")[-300:]
    return {"first_failed_pid": int(m.group(1)), "code": int(m.group(2)), "line": line}


def _metric(v: Any) -> Any:
    """Numbers stay numbers; NaN/Inf stay their strings (facts are JSON); anything else is None."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity", "nan", "inf", "-inf"):
        return v
    return None


def parse_stack(text: str, thread: str | None) -> list[str]:
    """Frames ("file:line func", innermost first) of ``thread`` in the newest faulthandler dump.

    Without a known thread id, the "Current thread" block (the one the signal interrupted, the main
    thread for a process-directed SIGUSR1) is used.
    """
    blocks: list[tuple[str, bool, list[str]]] = []
    cur: list[str] | None = None
    for line in text.splitlines():
        m = _THREAD_RE.match(line)
        if m:
            cur = []
            blocks.append((m.group(1), line.startswith("Current"), cur))
            continue
        fm = _FRAME_RE.match(line)
        if fm and cur is not None:
            cur.append(f"{fm['file']}:{fm['line']} {fm['func']}")
    want = int(thread, 16) if thread else None
    for ident, current, frames in reversed(blocks):
        if (want is not None and int(ident, 16) == want) or (want is None and current):
            return frames
    return []


def _host_mem() -> dict[str, int] | None:
    try:
        import psutil

        vm = psutil.virtual_memory()
        return {"total": int(vm.total), "available": int(vm.available)}
    except Exception:  # psutil missing / unreadable: the fact becomes Unknown
        return None


def _alive(pid: int | None, started: float | None) -> bool | None:
    """Is the rank's process still running? None when it cannot be told (no pid, no psutil)."""
    if pid is None:
        return None
    try:
        import psutil

        p = psutil.Process(pid)
        # a recycled pid belongs to a process created after the rank started
        if started is not None and p.create_time() > started + 1.0:
            return False
        return p.status() != psutil.STATUS_ZOMBIE
    except ImportError:
        return None
    except Exception:  # NoSuchProcess, AccessDenied: gone or not ours to inspect
        return False


class RunCollector:
    """Tails one run directory; ``poll()`` reads what was appended, ``facts()`` snapshots it."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.ranks: dict[int, RankState] = {}
        self.tails: dict[int, rundir.Tail] = {}
        self.world: int | None = None
        self.stack_requested: dict[int, float] = {}
        self.stopped_by_supervisor = False
        self.last_ranks: dict[str, dict[str, Any]] = {}  # run.ranks of the newest snapshot
        self.hostname = socket.gethostname()
        self._launcher_seen: tuple[int, dict[str, Any] | None] | None = None
        self.events_read: dict[int, int] = {}  # events read per rank (coverage)

    def poll(self) -> int:
        """Read new complete lines of every rank file; returns the number of events read."""
        n = 0
        for rank, path in rundir.rank_files(self.run_dir).items():
            tail = self.tails.setdefault(rank, rundir.Tail(path))
            try:
                evs = tail.read()
            except OSError:
                continue  # unreadable now (permissions, vanished): retried at the next poll
            st = self.ranks.setdefault(rank, RankState(rank))
            for ev in evs:
                st.apply(ev)
                if ev.get("kind") == "start" and isinstance(ev.get("world"), int):
                    self.world = max(self.world or 0, ev["world"])
            n += len(evs)
            self.events_read[rank] = self.events_read.get(rank, 0) + len(evs)
        return n

    def _launcher(self) -> dict[str, Any] | None:
        """launcher_verdict, re-read only when msrun's console grew (it is polled every 0.5 s)."""
        try:
            size = os.stat(self.run_dir / rundir.LAUNCHER_LOG).st_size
        except OSError:
            size = -1
        if self._launcher_seen is None or self._launcher_seen[0] != size:
            self._launcher_seen = (size, launcher_verdict(self.run_dir) if size > 0 else None)
        return self._launcher_seen[1]

    @property
    def skipped(self) -> int:
        return sum(t.skipped for t in self.tails.values())

    def _stack(self, st: RankState) -> dict[str, Any] | None:
        path = rundir.stack_file(self.run_dir, st.rank)
        try:
            raw = rundir.read_small(path)
            if not raw:
                return None
            text = raw.decode("utf-8", errors="replace")
            mtime = path.stat().st_mtime
        except OSError:
            return None
        frames = parse_stack(text, st.main_thread)
        return {"t": mtime, "file": str(path), "frames": frames[:30]} if frames else None

    def facts(self, now: float | None = None, running: bool | None = None) -> Facts:
        facts = Facts()
        facts.meta = {"run_dir": str(self.run_dir), "skipped_lines": self.skipped}
        if not self.ranks:
            facts.unknown("run.ranks", f"no events under {rundir.events_dir(self.run_dir)}", SOURCE)
            return facts
        newest = max((s.last_seen_t or 0.0) for s in self.ranks.values())
        facts.set("run.world", self.world or len(self.ranks), SOURCE)
        ranks: dict[str, Any] = {}
        stacks: dict[str, Any] = {}
        for r, st in sorted(self.ranks.items()):
            local = st.host == self.hostname if st.host else None
            alive = _alive(st.pid, st.started) if local and st.ended is None else (False if st.ended else None)
            ranks[str(r)] = {
                "pid": st.pid,
                "host": st.host,
                "local": local,
                "alive": alive,
                "started": st.started,
                "ended": st.ended,
                "end_status": st.end_status,
                "last_step": st.last_step,
                "last_step_t": st.last_step_t,
                "last_progress_t": st.last_progress_t,
                "last_seen_t": st.last_seen_t,
                "phase": st.phase,
                "phase_step": st.phase_step,
                "where": st.where,
                "where_user": st.where_user,
                "heartbeat_s": st.heartbeat_s,
                "stack_requested_t": self.stack_requested.get(r),
                "watchdog_errors": st.watchdog_errors,
                "collective_timeout": collective_timeout(st.device_target, st.comm_env),
                "disk_full_t": st.disk_full_t,
                "disk_full_error": st.disk_full_error,
            }
            stack = self._stack(st)
            if stack is not None:
                stacks[str(r)] = stack
        if now is None:
            # a rank still running makes the wall clock the present; post-mortem it is the newest event
            now = time.time() if any(v["alive"] for v in ranks.values()) else newest
        facts.set("run.now", float(now), SOURCE)
        facts.set("run.ranks", ranks, SOURCE)
        self.last_ranks = ranks
        facts.set("run.series", {str(r): st.series for r, st in self.ranks.items()}, SOURCE)
        facts.set(
            "run.checksums",
            {str(r): {str(k): v for k, v in sorted(st.checksums.items())} for r, st in self.ranks.items()},
            SOURCE,
        )
        facts.set("run.exceptions", {str(r): st.exceptions for r, st in self.ranks.items()}, SOURCE)
        facts.set("run.stacks", stacks, SOURCE)
        mem = _host_mem()
        if mem is None:
            facts.unknown("run.host_mem", "psutil cannot read the host memory", "psutil")
        else:
            facts.set("run.host_mem", mem, "psutil")
        facts.set("run.job", {"running": running, "stopped_by_supervisor": self.stopped_by_supervisor}, "supervisor")
        disk = _disk(self.run_dir)
        if disk is None:
            facts.unknown("run.disk", f"statvfs({self.run_dir}) failed", "statvfs")
        else:
            facts.set("run.disk", disk, "statvfs")
        launcher = self._launcher()
        if launcher is None:
            facts.unknown("run.launcher", f"no failed worker in {self.run_dir / rundir.LAUNCHER_LOG}", "msrun")
        else:
            facts.set("run.launcher", launcher, "msrun")
        return facts


def load_supervisor_state(col: RunCollector) -> str | None:
    """What the live supervisor did (stack requests, stopping the job), from ``RUN/supervisor.json``.

    Returns a reason when the file exists but cannot be read (the caller reports it as skipped).
    """
    data, why = rundir.read_json_object(col.run_dir / SUPERVISOR_FILE)
    if data is None:
        return why
    col.stopped_by_supervisor = bool(data.get("stopped_by_supervisor"))
    for k, v in (data.get("stack_requested") or {}).items():
        if str(k).isdigit() and isinstance(v, (int, float)):
            col.stack_requested[int(k)] = float(v)
    return None


def collect_run(run_dir: str | Path) -> tuple[Facts, RunCollector]:
    """One post-mortem pass over a run directory."""
    col = RunCollector(run_dir)
    load_supervisor_state(col)
    col.poll()
    return col.facts(), col
