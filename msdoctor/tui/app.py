"""`msdoctor monitor RUN`: a Textual view over a run's event streams and findings.

Threading: one thread worker owns the :class:`~msdoctor.tui.state.RunState` (reads the files by
offset, folds the events) and posts an immutable :class:`~msdoctor.tui.state.Snapshot` after each
read that changed something (and at least once a second, for the heartbeat ages). The UI thread never
touches the fold; it keeps the latest snapshot and its own view state (sort, filter, cursor, pause).
Built by :func:`make_app`, shared by the CLI, :mod:`msdoctor.tui.launch` and the tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.scrollbar import ScrollBarRender
from textual.widgets import DataTable, Footer, Header, Static, TabbedContent, TabPane, Tabs
from textual.widgets._tabs import Underline

from msdoctor.tui.screens import SEVERITY_STYLE, FindingScreen, HelpScreen, JumpScreen, RankScreen
from msdoctor.tui.source import ReplayReader
from msdoctor.tui.state import SEVERITIES, FindingView, RankView, RunState, Snapshot
from msdoctor.tui.text import Glyphs, line
from msdoctor.tui.widgets import COLUMNS, SORTABLE, HeatStrip, Plots, RankTable

MESSAGE_WIDTH = 240
FINDING_COLUMNS: tuple[tuple[str, int], ...] = (
    ("severity", 8), ("rule", 8), ("rank", 4), ("step", 5), ("message", MESSAGE_WIDTH))
SHORT_SEVERITY = {"error": "err", "warning": "warn", "info": "info"}
SEVERITY_FILTERS: tuple[str | None, ...] = (None, *SEVERITIES)
HEARTBEAT_REPOST_S = 1.0


class MonitorApp(App[int]):
    TITLE = "msdoctor monitor"
    CSS = """
    #jobbar { height: 1; background: $boost; padding: 0 1; }
    #ranks { height: auto; max-height: 50%; min-height: 3; }
    #lower { height: 1fr; min-height: 7; }
    #findings { height: 1fr; }
    #status { height: 1; color: $text-muted; padding: 0 1; }
    Footer.ascii FooterKey.-command-palette { border-left: none; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("f", "cycle_filter", "Severity"),
        Binding("j", "jump", "Jump"),
        Binding("slash", "search_log", "Log"),
        Binding("question_mark", "help", "Help"),
        Binding("1", "tab('tab-findings')", "Findings", show=False),
        Binding("2", "tab('tab-heat')", "Heat", show=False),
        Binding("3", "tab('tab-plots')", "Plots", show=False),
    ]
    # key, description: the help screen and the command palette read this table (one source)
    KEYS: tuple[tuple[str, str, str], ...] = (
        ("enter", "open the selected rank / finding (evidence, stack, fix, explain)", ""),
        ("escape", "back", ""),
        ("tab", "move between the rank table and the findings", ""),
        ("q", "quit (a supervisor started with --tui keeps running)", "quit"),
        ("p", "pause / resume the display (reading continues)", "toggle_pause"),
        ("s", "sort the ranks: " + ", ".join(SORTABLE), "cycle_sort"),
        ("f", "filter the findings: all, error, warning, info", "cycle_filter"),
        ("j", "jump to a rank", "jump"),
        ("/", "search the selected rank's log", "search_log"),
        ("d", "in a finding or a rank: have the live rank dump its stack now", ""),
        ("1 2 3", "findings / step-time heat-strip / plots", ""),
        ("?", "this help", "help"),
        ("ctrl+p", "command palette", ""),
    )

    class SnapshotReady(Message):
        def __init__(self, snapshot: Snapshot) -> None:
            super().__init__()
            self.snapshot = snapshot

    class TailFailed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, run_dir: Path, poll_s: float = 0.5, clock: Callable[[], float] = time.time,
                 ascii_only: bool = False, replay: ReplayReader | None = None) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.replay = replay  # a finished run played back: its reader and its clock
        if replay is not None:
            clock = replay.clock
        self.poll_s = poll_s
        self.clock = clock
        self.ascii_only = ascii_only
        self.glyphs = Glyphs.for_terminal(ascii_only)
        self.paused = False
        self.severity_filter: str | None = None
        self.snapshot: Snapshot | None = None  # the one shown
        self.latest: Snapshot | None = None  # the newest received (differs while paused)
        self.updates = 0  # snapshots applied (tests, bench)
        self.on_update: Callable[[Snapshot], None] | None = None  # bench hook: called after a snapshot is shown
        self._shown_findings: tuple[FindingView, ...] | None = None
        self._shown_filter: str | None = None
        self._scrollbar_renderer: type[ScrollBarRender] | None = None
        self.read_error: str | None = None  # the tail worker's last failure, until its next good read

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(icon="*" if self.ascii_only else "⭘")
        yield Static("", id="jobbar")
        yield RankTable(self.glyphs, id="ranks")
        with TabbedContent(id="lower", initial="tab-findings"):
            with TabPane("Findings", id="tab-findings"):
                yield DataTable(id="findings", zebra_stripes=True, cursor_type="row")
            with TabPane("Step-time heat", id="tab-heat"):
                yield HeatStrip(self.glyphs, id="heat")
            with TabPane("Plots", id="tab-plots"), VerticalScroll():
                yield Plots(self.glyphs, id="plots")
        yield Static("waiting for the first read", id="status")
        yield footer(self)

    def on_mount(self) -> None:
        # the overview's widgets, kept: while a drill-down screen is on top, app.query_one would search it
        self.w_ranks = self.query_one("#ranks", RankTable)
        self.w_findings = self.query_one("#findings", DataTable)
        self.w_lower = self.query_one("#lower", TabbedContent)
        self.w_heat = self.query_one("#heat", HeatStrip)
        self.w_plots = self.query_one("#plots", Plots)
        self.w_jobbar = self.query_one("#jobbar", Static)
        self.w_status = self.query_one("#status", Static)
        self.sub_title = line(self.run_dir)
        findings = self.w_findings
        for c, width in FINDING_COLUMNS:  # fixed widths: measured ones depend on when the first rows came
            findings.add_column(c, key=c, width=width)
        for tabs in self.w_lower.query(Tabs):
            tabs.can_focus = False  # Tab goes rank table -> findings; 1 2 3 switch the panes
        if self.ascii_only:
            from textual.scrollbar import ScrollBar

            for u in self.query(Underline):
                u.display = False  # drawn with box-drawing bars; the active tab keeps its colour
            self._scrollbar_renderer = ScrollBar.renderer
            ScrollBar.renderer = AsciiScrollBarRender
        self.w_ranks.focus()
        self.tail()

    def on_unmount(self) -> None:
        if self._scrollbar_renderer is not None:
            from textual.scrollbar import ScrollBar

            ScrollBar.renderer = self._scrollbar_renderer

    def format_title(self, title: str, sub_title: str) -> Content:
        if not self.ascii_only:
            return super().format_title(title, sub_title)
        room = max(8, self.size.width - len(title) - 26)  # the header would cut it with an ellipsis
        if len(sub_title) > room:
            sub_title = "~" + sub_title[-(room - 1):]
        return Content.assemble(Content(title), (" - ", "dim"), Content(sub_title).stylize("dim"))

    def get_key_display(self, binding: Binding) -> str:
        shown = super().get_key_display(binding)
        if self.ascii_only and not shown.isascii():
            return binding.key
        return shown

    # -- the worker: reads and folds, posts immutable snapshots ----------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, name="tail")
    def tail(self) -> None:
        from textual.worker import get_current_worker

        worker = get_current_worker()
        state = RunState(self.run_dir, clock=self.clock, reader=self.replay)  # private to this thread
        last_post = -1e9
        # the app closing cancels the worker; an app that failed on the way may not: stop with it too
        while not worker.is_cancelled and self.is_running and self.return_code is None:
            try:
                changed = state.poll()
                now = time.monotonic()
                if changed or now - last_post >= HEARTBEAT_REPOST_S:
                    self.post_message(self.SnapshotReady(state.snapshot()))
                    last_post = now
            except Exception as exc:  # an unreadable file must not freeze the screen: say so, try again
                self.post_message(self.TailFailed(f"{type(exc).__name__}: {exc}"))
            time.sleep(self.poll_s)

    def on_monitor_app_tail_failed(self, message: TailFailed) -> None:
        self.read_error = message.error
        if self.w_ranks.is_attached:
            self._show_status()

    def on_monitor_app_snapshot_ready(self, message: SnapshotReady) -> None:
        self.read_error = None
        self.latest = message.snapshot
        if not self.paused and self.w_ranks.is_attached:
            self.show(message.snapshot)

    # -- rendering a snapshot (UI thread only) ---------------------------------------------------
    def show(self, snap: Snapshot) -> None:
        self.snapshot = snap
        now = self.clock()
        table = self.w_ranks
        table.set_snapshot(snap, now)
        self._show_findings(snap)
        lower = self.w_lower
        if lower.active == "tab-heat":
            self.w_heat.set_snapshot(snap)
        elif lower.active == "tab-plots":
            self.w_plots.set_snapshot(snap, table.cursor_rank)
        self.w_jobbar.update(self.job_line(snap))
        self._show_status()
        self.updates += 1
        if self.on_update is not None:
            self.on_update(snap)

    def job_line(self, snap: Snapshot) -> Text:
        """Job-level figures, most telling first (an 80-column terminal cuts the end)."""
        t = Text(no_wrap=True, overflow="crop")
        steps = [r.step for r in snap.ranks if r.step is not None]
        lo = min(steps) if steps else None
        t.append(f"step {'-' if lo is None else lo}" + (f"/{snap.target_steps}" if snap.target_steps else ""), "bold")
        if snap.culprit is not None:
            t.append(f"  culprit: rank {snap.culprit} ({snap.root_rule})", "bold color(203)")
        if snap.stragglers:
            t.append(f"  slow: {_ranks(snap.stragglers)}", "bold color(220)")
        t.append("  ")
        for sev, n in snap.by_severity().items():
            t.append(f"{n} {SHORT_SEVERITY[sev]}", SEVERITY_STYLE[sev] if n else "dim")
            t.append(" ")
        running = sum(1 for r in snap.ranks if r.shown_status(self.clock()) == "running")
        t.append(f" {running}/{len(snap.ranks)} running")
        if running:  # a rate or an ETA of ranks that stopped would be a guess
            t.append(f"  {_rate(snap.steps_per_s)} steps/s")
            if snap.tokens_per_s:
                t.append(f"  {_si(snap.tokens_per_s)} tok/s")
            if snap.eta_s is not None:
                t.append(f"  ETA {_dur(snap.eta_s)}")
        elif snap.finished:
            t.append("  finished")
        elif snap.ranks:
            t.append("  stopped", "bold color(203)")
        if self.paused:
            t.append("  PAUSED", "reverse")
        return t

    def _show_findings(self, snap: Snapshot) -> None:
        if snap.findings is self._shown_findings and self.severity_filter == self._shown_filter:
            return
        self._shown_findings, self._shown_filter = snap.findings, self.severity_filter
        table = self.w_findings
        keep = table.cursor_row
        table.clear()
        for f in self.visible_findings(snap):
            table.add_row(
                Text(f.severity, style=SEVERITY_STYLE.get(f.severity, "")), Text(f.rule),
                Text("all" if f.rank is None else str(f.rank)), Text("-" if f.step is None else str(f.step)),
                Text(line(f.message or f.title, MESSAGE_WIDTH)), key=f.key)
        if table.row_count:
            table.move_cursor(row=min(keep, table.row_count - 1))

    def visible_findings(self, snap: Snapshot) -> list[FindingView]:
        return [f for f in snap.findings if self.severity_filter in (None, f.severity)]

    def _show_status(self) -> None:
        snap = self.snapshot
        table = self.w_ranks
        parts = [f"sort: {table.sort_key}{' (desc)' if table.descending else ''}",
                 f"findings: {self.severity_filter or 'all'}"]
        if snap is not None and snap.skipped:
            parts.append(f"{snap.skipped} unreadable line(s) skipped")
        if self.read_error:
            parts.append(f"read failed: {line(self.read_error, 120)}")
        if self.replay is not None:
            parts.append(f"replay x{self.replay.speed:g}" + (" (done)" if self.replay.done else ""))
        if self.paused:
            parts.append("PAUSED (p resumes)")
        self.w_status.update(Text(" | ".join(parts)))

    # -- drill-down ------------------------------------------------------------------------------
    def on_rank_table_selected(self, message: RankTable.Selected) -> None:
        self.open_rank(message.rank)

    def on_rank_table_highlighted(self, message: RankTable.Highlighted) -> None:
        if self.snapshot is not None and self.w_lower.active == "tab-plots":
            self.w_plots.set_snapshot(self.snapshot, message.rank)

    def on_data_table_row_selected(self, message: DataTable.RowSelected) -> None:
        if message.data_table.id != "findings" or self.snapshot is None:
            return
        key = message.row_key.value
        f = next((f for f in self.snapshot.findings if f.key == key), None)
        if f is not None:
            self.push_screen(FindingScreen(self.run_dir, f))

    def on_tabbed_content_tab_activated(self, message: TabbedContent.TabActivated) -> None:
        if self.snapshot is not None:
            self.show(self.snapshot)

    def rank_view(self, rank: int) -> RankView | None:
        snap = self.latest or self.snapshot
        return None if snap is None else next((r for r in snap.ranks if r.rank == rank), None)

    def open_rank(self, rank: int, search: bool = False) -> None:
        view = None
        if self.snapshot is not None:
            view = next((r for r in self.snapshot.ranks if r.rank == rank), None)
        screen = RankScreen(self.run_dir, view, rank, self.clock(), ascii_only=self.ascii_only)
        self.push_screen(screen)
        if search:
            self.call_after_refresh(screen.action_search)

    # -- actions ---------------------------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused and self.latest is not None:
            self.show(self.latest)
        elif self.snapshot is not None:
            self.w_jobbar.update(self.job_line(self.snapshot))
        self._show_status()

    def action_cycle_sort(self) -> None:
        table = self.w_ranks
        i = SORTABLE.index(table.sort_key) if table.sort_key in SORTABLE else -1
        table.sort_by(SORTABLE[(i + 1) % len(SORTABLE)])
        self._show_status()

    def action_cycle_filter(self) -> None:
        i = SEVERITY_FILTERS.index(self.severity_filter)
        self.severity_filter = SEVERITY_FILTERS[(i + 1) % len(SEVERITY_FILTERS)]
        if self.snapshot is not None:
            self._show_findings(self.snapshot)
        self.w_lower.active = "tab-findings"
        self._show_status()

    def action_jump(self) -> None:
        def done(rank: int | None) -> None:
            if rank is None:
                return
            if not self.w_ranks.jump_to(rank):
                self.notify(f"no rank {rank} in this run", severity="warning", markup=False)
            else:
                self.w_ranks.focus()

        self.push_screen(JumpScreen(), done)

    def action_search_log(self) -> None:
        rank = self.w_ranks.cursor_rank
        if rank is None:
            self.notify("no rank yet", severity="warning", markup=False)
            return
        self.open_rank(rank, search=True)

    def action_help(self) -> None:
        self.push_screen(HelpScreen([(k, d) for k, d, _ in self.KEYS]))

    def action_tab(self, tab: str) -> None:
        self.w_lower.active = tab

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key, desc, action in self.KEYS:
            if action:
                yield SystemCommand(f"{desc.split(' (')[0].split(':')[0].capitalize()} [{key}]", desc,
                                    getattr(self, f"action_{action}"))
        for key in SORTABLE:
            yield SystemCommand(f"Sort ranks by {key}", f"sort the rank table by {key}",
                                lambda k=key: self._sort_by(k))

    def _sort_by(self, key: str) -> None:
        self.w_ranks.sort_by(key)
        self._show_status()


class AsciiScrollBarRender(ScrollBarRender):
    """Scroll bars without the eighth-block glyphs (the thumb is drawn by colour alone)."""

    VERTICAL_BARS = [" "] * 8
    HORIZONTAL_BARS = [" "] * 8


def footer(app: object) -> Footer:
    return Footer(classes="ascii" if getattr(app, "ascii_only", False) else "")


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}" if v < 10 else f"{v:.0f}"


def _si(v: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= div:
            return f"{v / div:.1f}{unit}"
    return f"{v:.0f}"


def _dur(s: float) -> str:
    s = int(s)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _ranks(rs: Iterable[int]) -> str:
    rs = sorted(rs)
    return ", ".join(map(str, rs[:6])) + (f" +{len(rs) - 6}" if len(rs) > 6 else "")


def make_app(run_dir: Path, poll_s: float = 0.5, clock: Callable[[], float] = time.time,
             ascii_only: bool = False, replay_speed: float | None = None) -> MonitorApp:
    replay = ReplayReader(Path(run_dir), replay_speed) if replay_speed else None
    return MonitorApp(run_dir, poll_s=poll_s, clock=clock, ascii_only=ascii_only, replay=replay)


__all__ = ["COLUMNS", "MonitorApp", "make_app"]
