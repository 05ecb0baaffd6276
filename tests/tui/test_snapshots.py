"""SVG snapshots of the main screens at 80x24 and 160x45 (pytest-textual-snapshot).

The apps read the recorded runs under tests/tui/runs through a relative path (the screens show it)
with the clock pinned 5 s after the last event, so every figure on screen is fixed. After an
intended change of the screens: ``python -m pytest tests/tui/test_snapshots.py --snapshot-update``
and look at the new SVGs in tests/tui/__snapshots__/.
"""

from __future__ import annotations

import pytest

from msdoctor.tui.app import make_app
from tests.tui.conftest import RUNS, last_t, wait_for

SIZES = [(80, 24), (160, 45)]


@pytest.fixture(autouse=True)
def _in_tests_tui(monkeypatch):
    monkeypatch.chdir(RUNS.parent)


def app_for(name: str, ascii_only: bool = False):
    run_dir = RUNS / name
    t = last_t(run_dir)
    return make_app(run_dir.relative_to(RUNS.parent), poll_s=0.05, clock=lambda: t + 5.0, ascii_only=ascii_only)


def ready(app, *keys: str):
    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.findings)
        for k in keys:
            await pilot.press(k)
            await pilot.pause(0.1)
        await pilot.pause(0.2)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_overview_hang(snap_compare, size):
    app = app_for("hang")
    assert snap_compare(app, terminal_size=size, run_before=ready(app))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_finding_drill_down(snap_compare, size):
    app = app_for("hang")
    assert snap_compare(app, terminal_size=size, run_before=ready(app, "tab", "enter"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_rank_detail(snap_compare, size):
    app = app_for("hang")
    assert snap_compare(app, terminal_size=size, run_before=ready(app, "down", "enter"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_heat_strip_straggler(snap_compare, size):
    app = app_for("straggler")
    assert snap_compare(app, terminal_size=size, run_before=ready(app, "2"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_plots_straggler(snap_compare, size):
    app = app_for("straggler")
    assert snap_compare(app, terminal_size=size, run_before=ready(app, "down", "3"))


def test_help_80x24(snap_compare):
    app = app_for("hang")
    assert snap_compare(app, terminal_size=(80, 24), run_before=ready(app, "question_mark"))


def test_overview_ascii_80x24(snap_compare):
    app = app_for("hang", ascii_only=True)
    assert snap_compare(app, terminal_size=(80, 24), run_before=ready(app))
