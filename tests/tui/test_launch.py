"""run_with_tui: the supervisor in a thread outlives the monitor; its exit code is returned."""

from __future__ import annotations

import threading

import pytest

from msdoctor.tui.app import MonitorApp
from msdoctor.tui.launch import run_with_tui


class ClosesAtOnce(MonitorApp):
    def on_ready(self) -> None:  # after MonitorApp.on_mount (Textual calls each class's handler)
        self.exit()


def test_closing_the_monitor_leaves_supervision_running(hang_run):
    closed = threading.Event()
    seen: list[str] = []

    def supervise() -> int:
        assert closed.wait(60)  # the job runs on after the monitor was closed
        seen.append(threading.current_thread().name)
        return 7

    def factory(run_dir, ascii_only):
        app = ClosesAtOnce(run_dir, ascii_only=ascii_only)
        run = app.run

        def run_then_mark(**kw):
            try:
                return run(**kw)
            finally:
                closed.set()

        app.run = run_then_mark  # type: ignore[method-assign]
        return app

    rc = run_with_tui(hang_run, supervise, ascii_only=True, app_factory=factory, headless=True)
    assert rc == 7 and seen == ["msdoctor-supervise"]


def test_a_supervisor_exception_reaches_the_caller(hang_run):
    def supervise() -> int:
        raise RuntimeError("collector broke")

    with pytest.raises(RuntimeError, match="collector broke"):
        run_with_tui(hang_run, supervise, ascii_only=True, app_factory=ClosesAtOnce, headless=True)
