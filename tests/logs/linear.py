"""Timing helpers of the linearity tests (keywords, grammars, error-line forms): a search that grows
super-linearly with its input would stall `msdoctor logs` on one long pasted line."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any


def best_time(search: Callable[[Any], object], text: str | bytes, runs: int = 3) -> float:
    """The best of `runs` calls of `search` (a regex's `.search`, a grammar's `spans`) in this thread's CPU time:
    time other processes take on a loaded host (CI shares it; `make test` runs two workers) is not counted."""
    best = float("inf")
    for _ in range(runs):
        t = time.thread_time()
        search(text)
        best = min(best, time.thread_time() - t)
        if best < 0.05:
            break  # fast enough: no need to rule out noise
    return best


def assert_linear(search: Callable[[str], object], pads: Iterable[str], what: object = "") -> None:
    """`search` on 8 KiB of each pad takes under 0.5 s, and on 64 KiB (8× more) less than 24× as long."""
    for pad in pads:
        small, large = (pad * 8192)[:8192], (pad * 65536)[:65536]
        ts = best_time(search, small)
        assert ts < 0.5, (what, pad, f"{ts:.2f} s on 8 KiB")
        tl = best_time(search, large)
        if tl > 0.05:  # CPU time, best of 3: a run preempted on a loaded host is not a super-linear search
            assert tl / max(ts, 1e-4) < 24, (what, pad, "grows super-linearly", ts, tl)
