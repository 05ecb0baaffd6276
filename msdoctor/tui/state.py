"""What the monitor shows, folded from the event streams without any UI (so it is testable).

Threading: a :class:`RunState` belongs to the tail worker alone (it reads and folds); the UI thread
only ever sees the immutable :class:`Snapshot` values that :meth:`RunState.snapshot` returns (frozen
dataclasses and tuples, shared between snapshots where unchanged, never mutated afterwards).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from msdoctor.facts.run import SYNC_PHASES
from msdoctor.tui import source

SILENT_AFTER_S = 10.0  # heartbeats come every second; ten missed ones are not a slow disk
SERIES_LEN = 512  # steps kept per rank for the plots and the heat-strip
STRAGGLER_WINDOW = 8  # recent steps whose median step time a rank is judged by
STRAGGLER_AT = 1.3  # score (rank's median step time / median over ranks) that marks a straggler
RATE_WINDOW = 32  # (t, step) pairs per rank for steps/s
SEVERITIES = ("error", "warning", "info")


class Point(NamedTuple):
    step: int
    loss: float | None
    grad_norm: float | None
    loss_scale: float | None
    step_ms: float | None
    work_ms: float | None  # own work: step time minus the wait for the other ranks and for data


@dataclass(frozen=True)
class RankView:
    rank: int
    status: str  # starting | running | ended | failed (see shown_status for 'silent')
    step: int | None
    loss: float | None
    step_ms: float | None
    data_wait_ms: float | None
    rss_mb: float | None
    device_mb: float | None
    phase: str
    where: str
    last_seen: float | None
    pid: int | None
    host: str  # where the rank runs (its start event)
    started: float | None  # time stamp of its start event
    straggler: float | None  # median own-work time over the median of all ranks (1.0 = typical)
    series: tuple[Point, ...]

    def age(self, now: float) -> float | None:
        return None if self.last_seen is None else max(0.0, now - self.last_seen)

    def shown_status(self, now: float, silent_after_s: float = SILENT_AFTER_S) -> str:
        """'silent' for a rank that should be running but wrote nothing, heartbeats included, for a while
        (killed, or the whole process frozen): its last events no longer describe it."""
        age = self.age(now)
        if self.status in ("starting", "running") and age is not None and age > silent_after_s:
            return "silent"
        return self.status


@dataclass(frozen=True)
class FindingView:
    rule: str
    severity: str
    rank: int | None
    step: int | None
    title: str
    message: str
    cause: str
    fix: str
    evidence: tuple[str, ...]
    has_stack: bool

    @property
    def key(self) -> str:
        return f"{self.rule}@{'all' if self.rank is None else self.rank}"


@dataclass(frozen=True)
class Snapshot:
    t: float  # the worker's clock when taken
    ranks: tuple[RankView, ...]
    findings: tuple[FindingView, ...]  # most severe first
    culprit: int | None  # rank named by the root-cause finding
    root_rule: str | None
    stragglers: frozenset[int]
    skipped: int
    steps_per_s: float | None
    tokens_per_s: float | None
    eta_s: float | None
    target_steps: int | None
    finished: bool  # every rank that started has ended

    def by_severity(self) -> dict[str, int]:
        out = dict.fromkeys(SEVERITIES, 0)
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out


@dataclass
class _Rank:
    rank: int
    status: str = "starting"
    step: int | None = None
    loss: float | None = None
    step_ms: float | None = None
    data_wait_ms: float | None = None
    rss_mb: float | None = None
    device_mb: float | None = None
    phase: str = ""
    where: str = ""
    last_seen: float | None = None
    pid: int | None = None
    host: str = ""
    started: float | None = None
    series: tuple[Point, ...] = ()
    pending: list[Point] = field(default_factory=list)
    rate: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=RATE_WINDOW))
    view: RankView | None = None  # the last view handed out, reused while nothing changed
    dirty: bool = True


@dataclass
class RunState:
    """Folds events and findings into one row per rank. Owned by one thread (the tail worker)."""

    run_dir: Path
    clock: Callable[[], float] = time.time
    ranks: dict[int, _Rank] = field(default_factory=dict)
    latest: dict[tuple[Any, Any], dict[str, Any]] = field(default_factory=dict)  # (rule, rank) → finding
    skipped_lines: int = 0
    bad_findings: int = 0
    reader: source.RunReader | source.ReplayReader | None = None
    _findings_view: tuple[FindingView, ...] = ()
    _root: tuple[int | None, str | None] = (None, None)
    _meta: dict[str, Any] | None = None

    def poll(self) -> bool:
        """Read what was appended since the last call; True when anything changed."""
        if self.reader is None:
            self.reader = source.RunReader(self.run_dir)
        batch = self.reader.read()
        for evs in batch.events.values():
            self.apply(evs)
        if batch.findings:
            self.add_findings(batch.findings)
        self.skipped_lines = batch.skipped + self.bad_findings
        return bool(batch)

    # -- folding ---------------------------------------------------------------------------------
    def apply(self, evs: Iterable[dict[str, Any]]) -> None:
        for ev in evs:
            rank = ev.get("rank")
            if not isinstance(rank, int) or isinstance(rank, bool):
                continue
            row = self.ranks.get(rank)
            if row is None:
                row = self.ranks[rank] = _Rank(rank)
            row.dirty = True
            t = _num(ev.get("t"), None)
            if t is not None:
                row.last_seen = max(row.last_seen or 0.0, t)
            kind = ev.get("kind")
            if kind == "start":
                row.status = "running"
                pid = ev.get("pid")
                row.pid = pid if isinstance(pid, int) else row.pid
                row.host, row.started = _str(ev.get("host")) or row.host, t
            elif kind == "step":
                row.status = "running" if row.status == "starting" else row.status
                step = ev.get("step")
                if isinstance(step, int) and not isinstance(step, bool):
                    row.step = step
                    if t is not None:
                        row.rate.append((t, step))
                row.loss = _num(ev.get("loss"), row.loss)
                st = _num(ev.get("step_time"), None)
                row.step_ms = st * 1000.0 if st is not None else row.step_ms
                dw = _num(ev.get("data_wait"), None)
                row.data_wait_ms = dw * 1000.0 if dw is not None else row.data_wait_ms
                rss = _num(ev.get("rss"), None)
                row.rss_mb = rss / 2**20 if rss is not None else row.rss_mb
                dm = _num(ev.get("device_mem"), None)
                row.device_mb = dm / 2**20 if dm is not None else row.device_mb
                row.phase = "step-done"
                if isinstance(step, int) and not isinstance(step, bool):
                    row.pending.append(Point(step, _num(ev.get("loss"), None), _num(ev.get("grad_norm"), None),
                                             _num(ev.get("loss_scale"), None), None if st is None else st * 1000.0,
                                             _work_ms(st, dw, ev.get("phases"))))
            elif kind == "heartbeat":
                row.phase = _str(ev.get("phase")) or row.phase
                row.where = _str(ev.get("where_user")) or _str(ev.get("where")) or row.where
                rss = _num(ev.get("rss"), None)
                row.rss_mb = rss / 2**20 if rss is not None else row.rss_mb
            elif kind == "phase":
                row.phase = _str(ev.get("phase")) or row.phase
            elif kind == "exception":
                row.status = "failed"
                first = (_str(ev.get("message")).strip().splitlines() or [""])[0]
                row.where = f"{_str(ev.get('type')) or 'Exception'}: {first}"[:300]
            elif kind == "end":
                row.status = "ended" if ev.get("status") == "ok" else "failed"

    def add_findings(self, new: Iterable[dict[str, Any]]) -> None:
        # The supervisor re-emits a finding as it learns more (keep the newest per rule × rank) and
        # marks one a later round superseded with "retracted": true (drop it), as report.py reads them.
        for f in new:
            key = (f.get("rule"), f.get("rank"))
            if f.get("retracted") is True:
                self.latest.pop(key, None)
            elif isinstance(f.get("rule"), str) and f.get("severity") in SEVERITIES:
                self.latest[key] = f
            else:
                self.bad_findings += 1
        self._findings_view = tuple(sorted((_finding_view(f) for f in self.latest.values()),
                                           key=lambda v: (SEVERITIES.index(v.severity), v.rule, _rank_key(v.rank))))
        self._root = _root_cause(list(self.latest.values()))

    @property
    def findings(self) -> list[dict[str, Any]]:
        return list(self.latest.values())

    # -- the snapshot ----------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        if self._meta is None or self._meta.get("status") == "running":
            self._meta = source.run_meta(self.run_dir)
        return self._meta

    def snapshot(self) -> Snapshot:
        medians: dict[int, float] = {}
        for r, row in self.ranks.items():
            if row.pending:
                row.series = (row.series + tuple(row.pending))[-SERIES_LEN:]
                row.pending = []
            recent = [p.work_ms for p in row.series[-STRAGGLER_WINDOW:] if p.work_ms is not None]
            if recent:
                medians[r] = _median(recent)
        typical = _median(list(medians.values())) if len(medians) >= 2 else None
        views = []
        stragglers = set()
        for r in sorted(self.ranks):
            row = self.ranks[r]
            score = medians[r] / typical if typical and r in medians else None
            if score is not None and score >= STRAGGLER_AT:
                stragglers.add(r)
            if row.dirty or row.view is None or row.view.straggler != score:
                row.view = RankView(r, row.status, row.step, row.loss, row.step_ms, row.data_wait_ms, row.rss_mb,
                                    row.device_mb, row.phase, row.where, row.last_seen, row.pid, row.host, row.started,
                                    score, row.series)
                row.dirty = False
            views.append(row.view)
        for f in self._findings_view:
            if f.rule == "PERF201" and f.rank is not None:
                stragglers.add(f.rank)
        meta = self.meta()
        rate = self._steps_per_s()
        target = meta.get("steps") if isinstance(meta.get("steps"), int) else None
        tokens = _tokens_per_step(meta)
        finished = bool(views) and all(v.status in ("ended", "failed") for v in views)
        low = min((v.step or 0 for v in views), default=0)
        eta = (target - low) / rate if rate and target and not finished and target > low else None
        culprit, rule = self._root
        return Snapshot(
            t=self.clock(), ranks=tuple(views), findings=self._findings_view, culprit=culprit, root_rule=rule,
            stragglers=frozenset(stragglers - ({culprit} if culprit is not None else set())),
            skipped=self.skipped_lines, steps_per_s=rate, tokens_per_s=rate * tokens if rate and tokens else None,
            eta_s=eta, target_steps=target, finished=finished,
        )

    def _steps_per_s(self) -> float | None:
        rates = []
        for row in self.ranks.values():
            if len(row.rate) >= 2:
                (t0, s0), (t1, s1) = row.rate[0], row.rate[-1]
                if t1 > t0 and s1 > s0:
                    rates.append((s1 - s0) / (t1 - t0))
        return _median(rates) if rates else None


def _finding_view(f: dict[str, Any]) -> FindingView:
    ev_raw = f.get("evidence")
    ev: list[Any] = ev_raw if isinstance(ev_raw, list) else []
    texts = tuple(str(e.get("text", e)) if isinstance(e, dict) else str(e) for e in ev)
    data_raw = f.get("data")
    data: dict[str, Any] = data_raw if isinstance(data_raw, dict) else {}
    rank = f.get("rank") if isinstance(f.get("rank"), int) else None
    step = f.get("step") if isinstance(f.get("step"), int) else None
    return FindingView(str(f["rule"]), str(f["severity"]), rank, step, _str(f.get("title")), _str(f.get("message")),
                       _str(f.get("cause")), _str(f.get("fix")), texts, bool(data.get("stack")))


def _root_cause(found: list[dict[str, Any]]) -> tuple[int | None, str | None]:
    """The rank of the root-cause finding, by the closing report's own rule (roots before consequences)."""
    from msdoctor.engine.model import Finding
    from msdoctor.watch.diagnosis import root_cause

    parsed = []
    for d in found:
        try:
            parsed.append(Finding.from_dict(d))
        except (KeyError, ValueError, TypeError):
            continue
    rc = root_cause(parsed)  # the same choice as the closing report's (watch/diagnosis.py)
    if not rc.determined:
        return None, None
    return (rc.rank if isinstance(rc.rank, int) else None), rc.rule


def _work_ms(step_time: float | None, data_wait: float | None, phases: Any) -> float | None:
    """The rank's own work in a step (ms), as the straggler rule measures it (checks/run.py _own_time):
    a straggler's peers wait for it inside the collective, so their step time is as long as its own."""
    if step_time is None:
        return None
    sync = 0.0
    if isinstance(phases, dict):
        sync = sum(float(v) for k, v in phases.items() if k in SYNC_PHASES and isinstance(v, (int, float)))
    return max(0.0, step_time - sync - (data_wait or 0.0)) * 1000.0


def _tokens_per_step(meta: dict[str, Any]) -> int | None:
    cfg: Any = meta.get("config")
    try:
        return int(cfg["train"]["global_batch_size"]) * int(cfg["model"]["seq_length"])
    except (KeyError, TypeError, ValueError):
        return None


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def _rank_key(r: int | None) -> int:
    return -1 if r is None else r


def _num(v: Any, default: float | None) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    if v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    return default


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""
