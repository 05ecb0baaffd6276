"""A stand-in collective at a path under ``mindspore/``: where a waiting rank blocks, for the hang
tie-break (a rank blocked inside the framework waits; one outside it is the culprit)."""

from __future__ import annotations

import time
from collections.abc import Callable


def all_reduce(arrived: Callable[[], bool], timeout: float) -> None:
    """Block until ``arrived()`` (every rank reached the collective), polling inside this module."""
    deadline = time.monotonic() + timeout
    while not arrived():
        if time.monotonic() > deadline:
            raise RuntimeError("AllReduce failed.")
        time.sleep(0.002)
