"""`msdoctor monitor RUN`: a Textual view over a run's event streams and findings.

A worker thread tails the files by offset (toolong's habit) and posts small messages; the UI only
renders :class:`~msdoctor.tui.state.RunState`. Built by :func:`make_app`, shared by the CLI and tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from msdoctor.tui.state import RunState

RANK_COLUMNS = ("rank", "status", "step", "loss", "step ms", "RSS MB", "phase", "seen", "where")
FINDING_COLUMNS = ("severity", "rule", "rank", "step", "message")


def _fmt(v: object, spec: str = "") -> str:
    if v is None:
        return "-"
    return format(v, spec) if spec else str(v)


def _clip(s: str, n: int) -> str:
    """Keep the end (file:line func) of a long position, marked with an ellipsis."""
    if not s:
        return "-"
    return s if len(s) <= n else "…" + s[-(n - 1) :]


class MonitorApp(App[int]):
    TITLE = "msdoctor monitor"
    CSS = """
    #ranks { height: 1fr; }
    #findings { height: 1fr; }
    #status { height: 1; color: $text-muted; }
    """
    BINDINGS = [("q", "quit", "Quit"), ("p", "toggle_pause", "Pause/resume")]

    class Polled(Message):
        def __init__(self, changed: bool) -> None:
            super().__init__()
            self.changed = changed

    def __init__(self, run_dir: Path, poll_s: float = 0.5, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.state = RunState(Path(run_dir), clock=clock)
        self.poll_s = poll_s
        self.paused = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield DataTable(id="ranks", zebra_stripes=True, cursor_type="row")
            yield DataTable(id="findings", zebra_stripes=True, cursor_type="row")
            yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = str(self.state.run_dir)
        ranks = self.query_one("#ranks", DataTable)
        for c in RANK_COLUMNS:
            ranks.add_column(c, key=c)
        findings = self.query_one("#findings", DataTable)
        for c in FINDING_COLUMNS:
            findings.add_column(c, key=c)
        self.tail()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def tail(self) -> None:
        from textual.worker import get_current_worker

        worker = get_current_worker()
        while not worker.is_cancelled:
            if not self.paused:
                self.post_message(self.Polled(self.state.poll()))
            time.sleep(self.poll_s)

    def on_monitor_app_polled(self, message: Polled) -> None:
        self.refresh_tables()

    def refresh_tables(self) -> None:
        now = self.state.clock()
        ranks = self.query_one("#ranks", DataTable)
        with self.batch_update():
            for rank, row in sorted(self.state.ranks.items()):
                age = row.age(now)
                cells = (
                    str(rank),
                    row.shown_status(now),
                    _fmt(row.step),
                    _fmt(row.loss, ".4f"),
                    _fmt(row.step_ms, ".1f"),
                    _fmt(row.rss_mb, ".0f"),
                    row.phase or "-",
                    "-" if age is None else f"{age:.0f}s ago",
                    _clip(row.where, 60),
                )
                key = f"rank-{rank}"
                if key in ranks.rows:
                    for col, value in zip(RANK_COLUMNS, cells, strict=True):
                        ranks.update_cell(key, col, value)
                else:
                    ranks.add_row(*cells, key=key)
            findings = self.query_one("#findings", DataTable)
            current = {f"f-{f.get('rule')}-{f.get('rank')}" for f in self.state.findings}
            for row_key in list(findings.rows):
                if row_key.value not in current:
                    findings.remove_row(row_key)
            for f in self.state.findings:
                key = f"f-{f.get('rule')}-{f.get('rank')}"
                fcells = (
                    str(f.get("severity", "")),
                    str(f.get("rule", "")),
                    _fmt(f.get("rank")),
                    _fmt(f.get("step")),
                    str(f.get("message") or f.get("title") or "")[:120],
                )
                if key in findings.rows:
                    for col, value in zip(FINDING_COLUMNS, fcells, strict=True):
                        findings.update_cell(key, col, value)
                else:
                    findings.add_row(*fcells, key=key)
        n_err = sum(1 for f in self.state.findings if f.get("severity") == "error")
        note = f" · {self.state.skipped_lines} unreadable line(s) skipped" if self.state.skipped_lines else ""
        paused = " · PAUSED" if self.paused else ""
        self.query_one("#status", Static).update(
            f"{len(self.state.ranks)} rank(s) · {len(self.state.findings)} finding(s), {n_err} error(s){note}{paused}"
        )

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.refresh_tables()


def make_app(run_dir: Path, poll_s: float = 0.5, clock: Callable[[], float] = time.time) -> MonitorApp:
    return MonitorApp(run_dir, poll_s=poll_s, clock=clock)
