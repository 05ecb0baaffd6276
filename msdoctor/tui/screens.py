"""Drill-down screens (a finding, a rank), the key help and the jump-to-rank prompt. Escape goes back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Log, Static

from msdoctor.tui import source
from msdoctor.tui.state import FindingView, RankView
from msdoctor.tui.text import clean, line
from msdoctor.tui.widgets import fmt, fmt_age

SEVERITY_STYLE = {"error": "bold color(203)", "warning": "bold color(220)", "info": "color(39)"}


def section(title: str, body: str | Text, style: str = "") -> Static:
    text = Text(title + "\n", style="bold underline")
    text.append_text(body if isinstance(body, Text) else Text(clean(body), style=style))
    return Static(text, classes="section")


def explain_text(rule_id: str) -> str | None:
    """The rule's document, as ``msdoctor explain`` prints it (Markdown source, shown literally)."""
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.report.rulemd import rule_markdown

    rule = load_catalogue().get(rule_id)
    return None if rule is None else rule_markdown(rule, heading="#")


def ask_for_stack(screen: Screen[None], rank: int, show: Callable[[str], None]) -> None:
    """``d``: have a live rank dump its stack now, and show the new dump when it lands."""
    app: Any = screen.app
    view = app.rank_view(rank)
    if view is None:
        app.notify(f"rank {rank}: not seen yet", severity="warning", markup=False)
        return
    before = source.stack_text(app.run_dir, rank)  # before the signal: the dump can land at once
    ok, msg = source.request_stack(rank, view.shown_status(app.clock()), view.pid, view.host, view.started)
    app.notify(msg, severity="information" if ok else "warning", markup=False)
    if not ok:
        return
    tries = [0]

    def check() -> None:
        now = source.stack_text(app.run_dir, rank)
        tries[0] += 1
        if now and now != before:
            show(now)
            timer.stop()
        elif tries[0] >= 30:
            app.notify(f"rank {rank} wrote no stack within 9 s (is its main thread holding the GIL?)",
                       severity="warning", markup=False)
            timer.stop()

    timer = screen.set_interval(0.3, check)


class FindingScreen(Screen[None]):
    """A finding whole: message, evidence, the named rank's stack dump, the fix, the rule's explain text."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("r", "open_rank", "Rank detail"),
                Binding("d", "dump_stack", "Dump stack"), Binding("q", "app.quit", "Quit")]
    CSS = "FindingScreen .section { margin: 0 1 1 1; }"

    def __init__(self, run_dir: Path, finding: FindingView) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.finding = finding
        self.stack = source.stack_text(run_dir, finding.rank) if finding.rank is not None else None

    def compose(self) -> ComposeResult:
        f = self.finding
        head = Text(f"{f.rule} ", style="bold")
        head.append(f.severity, style=SEVERITY_STYLE.get(f.severity, ""))
        head.append(f"  rank {'all' if f.rank is None else f.rank}  step {fmt(f.step)}\n")
        head.append(clean(f.title), style="bold")
        with VerticalScroll(id="finding-body"):
            yield Static(head, id="finding-head", classes="section")
            yield section("Message", f.message, )
            ev = Text()
            for i, e in enumerate(f.evidence):
                ev.append(("\n" if i else "") + "- " + clean(e))
            yield section("Evidence", ev if f.evidence else Text("(none recorded)", style="dim"))
            if f.rank is not None:
                body = self.stack or f"(no stack dump of rank {f.rank}: the supervisor asks for one when it names a hang)"
                yield Static(self._stack_text(body), id="finding-stack", classes="section")
            yield section("Fix", f.fix or "-")
            yield section("Cause", f.cause or "-")
            yield section(f"msdoctor explain {f.rule}", explain_text(f.rule) or f"(no rule {f.rule} in the catalogue)")
        yield _footer(self.app)

    def _stack_text(self, body: str) -> Text:
        t = Text(f"Stack of rank {self.finding.rank}\n", style="bold underline")
        t.append(clean(main_thread_first(body)))
        return t

    def action_dump_stack(self) -> None:
        if self.finding.rank is not None:
            ask_for_stack(self, self.finding.rank,
                          lambda text: self.query_one("#finding-stack", Static).update(self._stack_text(text)))

    def action_open_rank(self) -> None:
        if self.finding.rank is not None:
            self.app.call_later(self.app.open_rank, self.finding.rank)  # type: ignore[attr-defined]


def main_thread_first(dump: str) -> str:
    """A faulthandler dump with the thread that was running (faulthandler's "Current thread", the
    main thread for a SIGUSR1 dump) first: that is where the rank is stuck."""
    blocks = dump.strip("\n").split("\n\n")
    current = [b for b in blocks if b.startswith("Current thread")]
    return "\n\n".join(current + [b for b in blocks if not b.startswith("Current thread")])


class RankScreen(Screen[None]):
    """One rank: its figures, recent events, its log (searchable) and its stack dump."""

    BINDINGS = [Binding("escape", "back", "Back"), Binding("slash", "search", "Search log"),
                Binding("n", "toggle_nonmatching", "Only matches"), Binding("d", "dump_stack", "Dump stack"),
                Binding("q", "app.quit", "Quit")]
    CSS = """
    RankScreen #rank-head { height: auto; margin: 0 1; }
    RankScreen #rank-cols { height: 1fr; }
    RankScreen #rank-events { height: 1fr; border: round $primary-darken-2; }
    RankScreen #rank-log { height: 2fr; border: round $primary-darken-2; }
    RankScreen #rank-stack { height: 1fr; border: round $primary-darken-2; }
    RankScreen #log-search { dock: bottom; display: none; }
    RankScreen #log-search.visible { display: block; }
    """

    def __init__(self, run_dir: Path, view: RankView | None, rank: int, now: float, ascii_only: bool = False) -> None:
        super().__init__()
        self.run_dir, self.view, self.rank, self.now = run_dir, view, rank, now
        self.ascii_only = ascii_only
        self.log_lines = [clean(s, keep_newlines=False) for s in source.log_tail(run_dir, rank)]
        self.query_text = ""
        self.only_matches = True
        self.matches = 0

    def compose(self) -> ComposeResult:
        v = self.view
        head = Text(f"rank {self.rank}", style="bold")
        if v is not None:
            head.append(f"  {v.shown_status(self.now)}  step {fmt(v.step)}  loss {fmt(v.loss, '.4f')}  "
                        f"step {fmt(v.step_ms, '.0f')} ms  data {fmt(v.data_wait_ms, '.0f')} ms  "
                        f"mem {fmt(v.rss_mb, '.0f')} MB  beat {fmt_age(v.age(self.now))}  pid {fmt(v.pid)}\n")
            head.append(f"phase {line(v.phase or '-')}  at {line(v.where or '-')}")
        yield Static(head, id="rank-head")
        with Vertical(id="rank-cols"):
            ev = Log(id="rank-events", highlight=False)
            ev.border_title = "recent events (UTC)"
            yield ev
            lg = Log(id="rank-log", highlight=False)
            lg.border_title = Text(f"log {line(source.log_path(self.run_dir, self.rank))}")
            yield lg
            stack = source.stack_text(self.run_dir, self.rank)
            with VerticalScroll(id="rank-stack") as vs:
                vs.border_title = "stack dump"
                yield Static(Text(clean(main_thread_first(stack)) if stack else
                                  "(no stack dump: msdoctor asks for one when the rank hangs)"),
                             id="rank-stack-text")
        yield Input(placeholder="search the log (Enter to apply, Escape to close)", id="log-search")
        yield _footer(self.app)

    def on_mount(self) -> None:
        self.query_one("#rank-events", Log).write_lines(_event_lines(source.recent_events(self.run_dir, self.rank)))
        self._show_log()

    def _show_log(self) -> None:
        log = self.query_one("#rank-log", Log)
        log.clear()
        q = self.query_text.lower()
        if not q:
            lines = self.log_lines or ["(no log lines)"]
            self.matches = 0
        else:
            hits = [s for s in self.log_lines if q in s.lower()]
            self.matches = len(hits)
            lines = hits if self.only_matches else self.log_lines
        log.write_lines(lines)
        title = f"log {line(source.log_path(self.run_dir, self.rank))}"
        if q:
            title += f"  search '{line(self.query_text, 30)}': {self.matches} line(s)"
        log.border_title = Text(title)

    def action_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.add_class("visible")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value
        event.input.remove_class("visible")
        self.query_one("#rank-log", Log).focus()
        self._show_log()

    def action_dump_stack(self) -> None:
        ask_for_stack(self, self.rank,
                      lambda text: self.query_one("#rank-stack-text", Static).update(Text(clean(main_thread_first(text)))))

    def action_toggle_nonmatching(self) -> None:
        self.only_matches = not self.only_matches
        self._show_log()

    def action_back(self) -> None:
        box = self.query_one("#log-search", Input)
        if box.has_class("visible"):
            box.remove_class("visible")
            self.query_one("#rank-log", Log).focus()
            return
        self.app.pop_screen()


def _footer(app: object) -> Footer:
    return Footer(classes="ascii" if getattr(app, "ascii_only", False) else "")


def _event_lines(evs: list[dict[str, Any]]) -> list[str]:
    import time as _time

    out = []
    for ev in evs:
        t = ev.get("t")
        ts = _time.strftime("%H:%M:%S", _time.gmtime(t)) if isinstance(t, (int, float)) else "--:--:--"
        kind = ev.get("kind")
        if kind == "checksum":
            rest = f"step {ev.get('step')} ({len(ev.get('sums') or {})} parameters)"
        elif kind == "start":
            rest = f"pid {ev.get('pid')} host {ev.get('host')} world {ev.get('world')}"
        else:
            rest = " ".join(f"{k}={_short(v)}" for k, v in ev.items() if k not in ("t", "rank", "kind"))
        out.append(line(f"{ts} {kind:<9} {rest}", 400))
    return out


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    s = str(v)
    return s if len(s) <= 80 else s[:79] + "~"


class HelpScreen(ModalScreen[None]):
    """The keys, from the same binding table the footer shows."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Close"), Binding("question_mark", "app.pop_screen", "Close")]
    CSS = """
    HelpScreen { align: center middle; }
    HelpScreen #help { width: 76; max-width: 100%; height: auto; max-height: 100%; border: round $accent;
                       background: $panel; padding: 0 1; }
    """

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        t = Text("msdoctor monitor: keys\n", style="bold")
        for key, desc in self.rows:
            t.append(f"  {key:<12}", style="bold color(39)")
            t.append(desc + "\n")
        t.append("\nRows: red = culprit (root-cause finding), yellow = straggler (slow x >= 1.3 or PERF201).\n"
                 "Heat-strip: one character per step, coloured by step time over the median.", style="dim")
        with VerticalScroll(id="help"):
            yield Static(t, id="help-text")


class JumpScreen(ModalScreen[int | None]):
    """Asks for a rank number; dismisses with it (None on Escape or bad input)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    CSS = "JumpScreen { align: center middle; } JumpScreen Input { width: 40; }"

    def compose(self) -> ComposeResult:
        yield Input(placeholder="jump to rank #", type="integer", id="jump-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            self.dismiss(int(event.value))
        except ValueError:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
