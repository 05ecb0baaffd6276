"""What the monitor shows, computed from the event streams without any UI (so it is testable)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msdoctor import rundir as events
from msdoctor.rundir import FINDINGS_FILE

SILENT_AFTER_S = 10.0  # heartbeats come every second; ten missed ones are not a slow disk


@dataclass
class RankRow:
    rank: int
    status: str = "starting"  # starting | running | ended | failed
    step: int | None = None
    loss: float | None = None
    step_ms: float | None = None
    rss_mb: float | None = None
    phase: str = ""
    where: str = ""
    last_seen: float | None = None  # unix time of the newest event of any kind
    pid: int | None = None

    def age(self, now: float) -> float | None:
        return None if self.last_seen is None else max(0.0, now - self.last_seen)

    def shown_status(self, now: float, silent_after_s: float = SILENT_AFTER_S) -> str:
        """'silent' for a rank that should be running but wrote nothing, heartbeats included, for a while
        (killed, or the whole process frozen): its last events no longer describe it."""
        age = self.age(now)
        if self.status in ("starting", "running") and age is not None and age > silent_after_s:
            return "silent"
        return self.status


@dataclass
class RunState:
    """Folds events and findings into one row per rank; tails files by offset on ``poll()``."""

    run_dir: Path
    clock: Callable[[], float] = time.time
    ranks: dict[int, RankRow] = field(default_factory=dict)
    latest: dict[tuple[Any, Any], dict[str, Any]] = field(default_factory=dict)  # (rule, rank) → finding
    skipped_lines: int = 0
    _tails: dict[int, events.Tail] = field(default_factory=dict)
    _findings_tail: events.Tail | None = None

    def poll(self) -> bool:
        """Read what was appended since the last call; True when anything changed."""
        changed = False
        for rank, path in events.rank_files(self.run_dir).items():
            tail = self._tails.setdefault(rank, events.Tail(path))
            evs = tail.read()
            if evs:
                self.apply(evs)
                changed = True
        if self._findings_tail is None:
            self._findings_tail = events.Tail(self.run_dir / FINDINGS_FILE)
        new = self._findings_tail.read()
        if new:
            self.add_findings(new)
            changed = True
        self.skipped_lines = sum(t.skipped for t in self._tails.values()) + self._findings_tail.skipped
        return changed

    def apply(self, evs: Iterable[dict[str, Any]]) -> None:
        for ev in evs:
            rank = ev.get("rank")
            if not isinstance(rank, int):
                continue
            row = self.ranks.setdefault(rank, RankRow(rank))
            t = ev.get("t")
            if isinstance(t, (int, float)):
                row.last_seen = max(row.last_seen or 0.0, float(t))
            kind = ev.get("kind")
            if kind == "start":
                row.status, row.pid = "running", ev.get("pid")
            elif kind == "step":
                row.status = "running" if row.status == "starting" else row.status
                row.step = ev.get("step", row.step)
                row.loss = _num(ev.get("loss"), row.loss)
                st = _num(ev.get("step_time"), None)
                row.step_ms = st * 1000.0 if st is not None else row.step_ms
                rss = _num(ev.get("rss"), None)
                row.rss_mb = rss / 2**20 if rss is not None else row.rss_mb
                row.phase = "step-done"
            elif kind == "heartbeat":
                row.phase = ev.get("phase") or row.phase
                row.where = ev.get("where") or row.where
                rss = _num(ev.get("rss"), None)
                row.rss_mb = rss / 2**20 if rss is not None else row.rss_mb
            elif kind == "phase":
                row.phase = ev.get("phase") or row.phase
            elif kind == "exception":
                row.status = "failed"
                row.where = f"{ev.get('type', 'Exception')}: {ev.get('message', '')}"[:200]
            elif kind == "end":
                row.status = "ended" if ev.get("status") == "ok" else "failed"

    @property
    def findings(self) -> list[dict[str, Any]]:
        return list(self.latest.values())

    def add_findings(self, new: Iterable[dict[str, Any]]) -> None:
        # The supervisor re-emits a finding as it learns more (keep the newest per rule × rank) and
        # marks one a later round superseded with "retracted": true (drop it), as report.py reads them.
        for f in new:
            key = (f.get("rule"), f.get("rank"))
            if f.get("retracted") is True:
                self.latest.pop(key, None)
            else:
                self.latest[key] = f


def _num(v: Any, default: float | None) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default
