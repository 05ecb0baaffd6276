"""Shared by the live-run checks (``run_*`` modules): phase order, formatting, step rows of a snapshot.

The live-run checks (rules 201–299, source "run") are pure functions of the ``run.*`` facts
(``msdoctor/facts/run.py`` builds them): the supervisor evaluates them every poll while the job runs,
``msdoctor watch`` / ``report`` once post-mortem. Every hit carries ``data["t"]``, the time of the
anomaly, so the closing report can order the first anomaly per rank.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.rundir import number as num

# Order of the phases inside one step: a rank further along waits for one that is behind.
PHASE_ORDER = {"step-done": 0, "data": 1, "forward": 3, "backward": 4, "step": 5, "collective": 6, "allreduce": 6, "optimizer": 7, "save": 8, "checkpoint": 8}
FRAMEWORK_MARKERS = ("/mindspore/", "\\mindspore\\")


def fmt_s(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.1f} s"


def clock(t: Any) -> str:
    """Wall-clock time of an event (UTC), stable across polls unlike a growing duration."""
    import datetime as dt

    x = num(t)
    return "?" if x is None else dt.datetime.fromtimestamp(x, dt.UTC).strftime("%H:%M:%S UTC")


def mib(x: float) -> str:
    return f"{x / 2**20:.1f} MiB"


# rows of the newest snapshot only (Facts is a mapping, unhashable): every rule of one evaluation
# shares them, the next snapshot replaces them
_ROWS: list[Any] = [None, None, {}]


def step_rows(facts: Facts, rank: str) -> list[dict[str, Any]]:
    """The step series of one rank as rows (one dict per step), built once per snapshot."""
    series = facts.need("run.series")
    if _ROWS[0] is None or _ROWS[0]() is not facts or _ROWS[1] is not series:
        _ROWS[0], _ROWS[1], _ROWS[2] = weakref.ref(facts), series, {}
    cache: dict[str, list[dict[str, Any]]] = _ROWS[2]
    if rank not in cache:
        cols = series.get(rank) or {}
        steps = cols.get("step") or []
        cache[rank] = [{c: (vals[i] if i < len(vals) else None) for c, vals in cols.items()} for i in range(len(steps))]
    return cache[rank]


def is_framework(where: str | None) -> bool:
    return where is not None and any(m in where for m in FRAMEWORK_MARKERS)

def position(r: Mapping[str, Any]) -> tuple[int, int]:
    """(step in progress, phase order within it) of a rank: who is furthest behind."""
    last = r.get("last_step")
    phase = r.get("phase") or ""
    ps = r.get("phase_step")
    if phase == "step-done" or ps is None:
        return ((last + 1) if isinstance(last, int) else 0, 0)
    return (ps, PHASE_ORDER.get(phase, 2))
