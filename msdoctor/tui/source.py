"""Everything the monitor reads from a run directory, in one place.

The monitor never opens a run's files elsewhere: the tail worker calls :class:`RunReader` and the
drill-down screens call the small readers below. Today they sit on :mod:`msdoctor.watch.events`
(the watchdog's event streams); pointing the monitor at another reader means changing this module only.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from msdoctor import rundir as events
from msdoctor.rundir import FINDINGS_FILE

RUN_META = "run.json"
LOGS_DIR = "logs"


@dataclass
class Batch:
    """What appeared since the previous read: events per rank and findings lines."""

    events: dict[int, list[dict[str, Any]]]
    findings: list[dict[str, Any]]
    skipped: int  # unreadable lines so far (all files)

    def __bool__(self) -> bool:
        return bool(self.events or self.findings)


@dataclass
class RunReader:
    """Tails ``events/rank_<r>.jsonl`` and ``findings.jsonl`` by byte offset (complete lines only)."""

    run_dir: Path
    _tails: dict[int, events.Tail] = field(default_factory=dict)
    _findings: events.Tail | None = None

    def read(self) -> Batch:
        out: dict[int, list[dict[str, Any]]] = {}
        for rank, path in events.rank_files(self.run_dir).items():
            tail = self._tails.get(rank)
            if tail is None:
                tail = self._tails[rank] = events.Tail(path)
            evs = tail.read()
            if evs:
                out[rank] = evs
        if self._findings is None:
            self._findings = events.Tail(self.run_dir / FINDINGS_FILE)
        found = self._findings.read()
        skipped = sum(t.skipped for t in self._tails.values()) + self._findings.skipped
        return Batch(out, found, skipped)


def is_run_dir(run_dir: Path) -> bool:
    return events.events_dir(run_dir).is_dir()


def run_meta(run_dir: Path) -> dict[str, Any]:
    """``run.json`` of a run started by ``msdoctor train`` ({} when absent or unreadable)."""
    try:
        d = orjson.loads((run_dir / RUN_META).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return d if isinstance(d, dict) else {}


def _read_end(path: Path, max_bytes: int) -> tuple[bytes, bool]:
    """The last ``max_bytes`` of a file, and whether the start was cut (b'' when unreadable)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes)
            fh.seek(start)
            return fh.read(), start > 0
    except OSError:
        return b"", False


def stack_text(run_dir: Path, rank: int, max_bytes: int = 64 << 10) -> str | None:
    """The rank's faulthandler dump(s) (``events/rank_<r>.stack.txt``), newest end kept; None if none."""
    data, cut = _read_end(events.stack_file(run_dir, rank), max_bytes)
    if not data:
        return None
    text = data.decode("utf-8", errors="replace")
    return text.split("\n", 1)[1] if cut and "\n" in text else text


def log_path(run_dir: Path, rank: int) -> Path:
    """msrun writes each worker's console to ``logs/worker_<r>.log``."""
    return run_dir / LOGS_DIR / f"worker_{rank}.log"


def log_tail(run_dir: Path, rank: int, max_lines: int = 2000, max_bytes: int = 1 << 20) -> list[str]:
    data, cut = _read_end(log_path(run_dir, rank), max_bytes)
    lines = data.decode("utf-8", errors="replace").splitlines()
    if cut and lines:
        lines = lines[1:]  # the first line was cut in the middle
    return lines[-max_lines:]


def recent_events(run_dir: Path, rank: int, n: int = 200, max_bytes: int = 256 << 10) -> list[dict[str, Any]]:
    """The rank's last ``n`` events (parsed from the end of its event file)."""
    data, cut = _read_end(events.rank_file(run_dir, rank), max_bytes)
    raw = data.split(b"\n")
    if cut and raw:
        raw = raw[1:]
    out: list[dict[str, Any]] = []
    for r in raw:
        if not r.strip():
            continue
        try:
            ev = orjson.loads(r)
        except orjson.JSONDecodeError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out[-n:]


class ReplayReader:
    """A finished run replayed: its events and findings released in time order at ``speed`` times the
    pace they were written, as if the run were live (``msdoctor monitor RUN --replay SPEED``)."""

    def __init__(self, run_dir: Path, speed: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.run_dir, self.speed, self._mono = run_dir, speed, monotonic
        self._skipped = 0
        evs: list[tuple[float, int, dict[str, Any]]] = []
        for rank, path in events.rank_files(run_dir).items():
            tail = events.Tail(path)
            for ev in tail.read():
                t = ev.get("t")
                evs.append((float(t) if isinstance(t, (int, float)) else -math.inf, rank, ev))
            self._skipped += tail.skipped
        evs.sort(key=lambda x: x[0])
        self._events = evs
        ftail = events.Tail(run_dir / FINDINGS_FILE)
        found = []
        for f in ftail.read():
            t = f.get("t", f.get("first_seen"))
            found.append((float(t) if isinstance(t, (int, float)) else -math.inf, f))
        found.sort(key=lambda x: x[0])
        self._findings = found
        self._skipped += ftail.skipped
        known = [t for t, _, _ in evs if t > -math.inf]
        self.t0 = min(known) if known else 0.0
        self.t_end = max(known) if known else 0.0
        self._start = monotonic()  # set once here: clock() is called from the worker and the UI thread
        self._i = self._j = 0

    def clock(self) -> float:
        """The replayed run's time now (its first event's time when the replay started)."""
        return self.t0 + (self._mono() - self._start) * self.speed

    def read(self) -> Batch:
        now = self.clock()
        out: dict[int, list[dict[str, Any]]] = {}
        while self._i < len(self._events) and self._events[self._i][0] <= now:
            _, rank, ev = self._events[self._i]
            out.setdefault(rank, []).append(ev)
            self._i += 1
        found = []
        while self._j < len(self._findings) and self._findings[self._j][0] <= now:
            found.append(self._findings[self._j][1])
            self._j += 1
        return Batch(out, found, self._skipped)

    @property
    def done(self) -> bool:
        return self._i >= len(self._events) and self._j >= len(self._findings)


def request_stack(rank: int, status: str, pid: int | None, host: str, started: float | None) -> tuple[bool, str]:
    """Ask a live rank for a faulthandler dump of every thread (the watchdog's SIGUSR1, as the supervisor
    does on a hang); it lands in ``events/rank_<r>.stack.txt``. Only a running rank on this host whose
    pid still is the process that started it (a pid reused by another process must not get the signal)."""
    import signal
    import socket

    if status not in ("starting", "running", "silent"):
        return False, f"rank {rank} has ended: no process to ask for a stack"
    if pid is None:
        return False, f"rank {rank}: no pid in its start event"
    if host and host != socket.gethostname():
        return False, f"rank {rank} runs on {host}: run `kill -USR1 {pid}` there"
    try:
        import psutil

        created = psutil.Process(pid).create_time()
    except Exception:  # gone, or the process table is unreadable
        return False, f"rank {rank}: process {pid} is gone"
    if started is not None and created > started + 1.0:
        return False, f"rank {rank}: pid {pid} now belongs to another process"
    try:
        os.kill(pid, signal.SIGUSR1)
    except OSError as exc:
        return False, f"rank {rank}: cannot signal pid {pid}: {exc.strerror or exc}"
    return True, f"asked rank {rank} (pid {pid}) for a stack dump"
