"""Recorded run directories (real 2-rank msrun jobs of the bundled trainer) and app helpers.

``runs/hang``: ``msdoctor train --workers 2 --steps 6 --collective-timeout 8 --inject hang:rank=1,step=4``
(COMM201 names rank 1, its faulthandler stack is in events/rank_1.stack.txt; rank 0 fails in the
all-reduce, COMM203). ``runs/straggler``: ``--steps 8 --inject straggler:rank=1,ms=400`` (PERF201 on rank 1).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import orjson
import pytest
from rich.console import Console

RUNS = Path(__file__).parent / "runs"


def last_t(run_dir: Path) -> float:
    t = 0.0
    for p in (run_dir / "events").glob("rank_*.jsonl"):
        for raw in p.read_bytes().splitlines():
            t = max(t, float(orjson.loads(raw).get("t", 0.0)))
    return t


@pytest.fixture
def hang_run(tmp_path) -> Path:
    dst = tmp_path / "hang"
    shutil.copytree(RUNS / "hang", dst)
    return dst


@pytest.fixture
def straggler_run(tmp_path) -> Path:
    dst = tmp_path / "straggler"
    shutil.copytree(RUNS / "straggler", dst)
    return dst


def screen_text(app) -> str:
    """What the terminal shows, as plain text (the same render as Textual's SVG screenshot)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


async def wait_for(pilot, cond, timeout: float = 20.0) -> None:
    """Pause until ``cond()`` holds (the tail worker posts snapshots from its own thread)."""
    for _ in range(int(timeout / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not met in time")
