"""The monitor's own widgets: a virtualised rank table, the rank × step heat-strip, the plots.

All three render from the latest :class:`~msdoctor.tui.state.Snapshot` only, and only the lines on
screen (Textual's Line API): 1,024 ranks cost what the visible rows cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from msdoctor.tui.state import Point, RankView, Snapshot
from msdoctor.tui.text import Glyphs, line, tail_clip


def fmt(v: float | int | None, spec: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return format(v, spec) if spec else str(v)


def fmt_age(age: float | None) -> str:
    if age is None:
        return "-"
    if age < 100:
        return f"{age:.0f}s"
    if age < 6000:
        return f"{age / 60:.0f}m"
    return f"{age / 3600:.0f}h"


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int
    cell: Callable[[RankView, float], str]
    sort: Callable[[RankView, float], float]
    right: bool = True


def _f(v: float | int | None) -> float:
    return -math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


COLUMNS: tuple[Column, ...] = (
    Column("rank", "rank", 5, lambda r, n: str(r.rank), lambda r, n: r.rank),
    Column("state", "state", 8, lambda r, n: r.shown_status(n), lambda r, n: ("failed", "silent", "starting",
                                                                              "running", "ended").index(r.shown_status(n)), False),
    Column("step", "step", 7, lambda r, n: fmt(r.step), lambda r, n: _f(r.step)),
    Column("loss", "loss", 8, lambda r, n: fmt(r.loss, ".4f"), lambda r, n: _f(r.loss)),
    Column("step_ms", "step ms", 8, lambda r, n: fmt(r.step_ms, ".0f"), lambda r, n: _f(r.step_ms)),
    Column("straggler", "slow x", 6, lambda r, n: fmt(r.straggler, ".2f"), lambda r, n: _f(r.straggler)),
    Column("data_ms", "data ms", 7, lambda r, n: fmt(r.data_wait_ms, ".0f"), lambda r, n: _f(r.data_wait_ms)),
    Column("mem", "mem MB", 7, lambda r, n: fmt(r.rss_mb if r.device_mb is None else r.device_mb, ".0f"),
           lambda r, n: _f(r.rss_mb if r.device_mb is None else r.device_mb)),
    Column("age", "beat", 5, lambda r, n: fmt_age(r.age(n)), lambda r, n: _f(r.age(n))),
    Column("phase", "phase", 10, lambda r, n: line(r.phase or "-", 10), lambda r, n: 0.0, False),
)
WHERE_WIDTH = 60
SORTABLE = ("rank", "straggler", "step_ms", "step", "age", "state", "loss", "data_ms", "mem")
# sorted descending by default (the interesting end first); the others ascending
DESCENDING = frozenset({"straggler", "step_ms", "age", "data_ms", "mem", "loss"})

STYLE_HEADER = Style(bold=True, underline=True)
STYLE_CULPRIT = Style(color="color(231)", bgcolor="color(124)", bold=True)
STYLE_STRAGGLER = Style(color="color(220)", bold=True)
STYLE_FAILED = Style(color="color(203)")
STYLE_SILENT = Style(color="color(177)")
STYLE_ENDED = Style(color="color(245)")
STYLE_CURSOR = Style(reverse=True)


class RankTable(ScrollView, can_focus=True):
    """One row per rank, sorted by a column; Enter posts :class:`RankTable.Selected`."""

    DEFAULT_CSS = "RankTable { height: 1fr; }"
    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
        Binding("enter", "select", "Rank detail"),
    ]

    class Selected(Message):
        def __init__(self, rank: int) -> None:
            super().__init__()
            self.rank = rank

    class Highlighted(Message):
        def __init__(self, rank: int) -> None:
            super().__init__()
            self.rank = rank

    def __init__(self, glyphs: Glyphs, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.glyphs = glyphs
        self.rows: tuple[RankView, ...] = ()
        self.now = 0.0
        self.culprit: int | None = None
        self.stragglers: frozenset[int] = frozenset()
        self.sort_key = "rank"
        self.descending = False
        self.cursor_rank: int | None = None
        self._by_rank: dict[int, RankView] = {}
        self._width = sum(c.width + 1 for c in COLUMNS) + 2 + WHERE_WIDTH

    # -- data ----------------------------------------------------------------------------------
    def set_snapshot(self, snap: Snapshot, now: float) -> None:
        self.now = now
        self.culprit, self.stragglers = snap.culprit, snap.stragglers
        self._by_rank = {r.rank: r for r in snap.ranks}
        self._resort(snap.ranks)
        if self.cursor_rank is None and self.rows:
            self.cursor_rank = self.rows[0].rank
            self.post_message(self.Highlighted(self.cursor_rank))

    def _resort(self, ranks: tuple[RankView, ...] | None = None) -> None:
        col = next(c for c in COLUMNS if c.key == self.sort_key)
        now = self.now
        rows = list(ranks if ranks is not None else self.rows)
        rows.sort(key=lambda r: (col.sort(r, now), r.rank), reverse=self.descending)
        self.rows = tuple(rows)
        self.virtual_size = Size(self._width, len(self.rows) + 1)
        self.refresh()

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        self.sort_key = key
        self.descending = key in DESCENDING if descending is None else descending
        self._resort()
        self._scroll_to_cursor()

    def index_of(self, rank: int | None) -> int | None:
        for i, r in enumerate(self.rows):
            if r.rank == rank:
                return i
        return None

    def jump_to(self, rank: int) -> bool:
        if rank not in self._by_rank:
            return False
        self._move_to(rank)
        return True

    # -- cursor --------------------------------------------------------------------------------
    def _move_to(self, rank: int) -> None:
        if rank != self.cursor_rank:
            self.cursor_rank = rank
            self.post_message(self.Highlighted(rank))
        self._scroll_to_cursor()
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        i = self.index_of(self.cursor_rank)
        if i is None:
            return
        visible = max(1, self.scrollable_content_region.height - 1)
        top = int(self.scroll_y)
        if i < top:
            self.scroll_to(y=i, animate=False)
        elif i >= top + visible:
            self.scroll_to(y=i - visible + 1, animate=False)

    def action_cursor(self, delta: int) -> None:
        if not self.rows:
            return
        i = self.index_of(self.cursor_rank)
        i = 0 if i is None else max(0, min(len(self.rows) - 1, i + delta))
        self._move_to(self.rows[i].rank)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 2))

    def action_edge(self, end: int) -> None:
        if self.rows:
            self._move_to(self.rows[-1 if end else 0].rank)

    def action_select(self) -> None:
        if self.cursor_rank is not None:
            self.post_message(self.Selected(self.cursor_rank))

    def on_click(self, event: events.Click) -> None:
        off = event.get_content_offset(self)
        if off is None or off.y < 1:
            return
        i = int(self.scroll_y) + off.y - 1
        if 0 <= i < len(self.rows):
            self._move_to(self.rows[i].rank)
            if event.chain >= 2:
                self.action_select()

    # -- rendering -----------------------------------------------------------------------------
    def _cells(self, r: RankView | None) -> list[str]:
        out = []
        for c in COLUMNS:
            if r is None:
                title = c.title + ("v" if self.descending else "^") if c.key == self.sort_key else c.title
                s = title
            else:
                s = c.cell(r, self.now)
            s = s[: c.width]
            out.append(s.rjust(c.width) if c.right else s.ljust(c.width))
        return out

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = int(self.scroll_x)
        base = self.rich_style
        if y == 0:
            text = " " + " ".join(self._cells(None)) + "  " + "file:line"
            strip = Strip([Segment(text, base + STYLE_HEADER)])
            return strip.crop_extend(scroll_x, scroll_x + width, base)
        i = int(self.scroll_y) + y - 1
        if i >= len(self.rows):
            return Strip.blank(width, base)
        r = self.rows[i]
        status = r.shown_status(self.now)
        style = base
        mark = " "
        if r.rank == self.culprit:
            style, mark = base + STYLE_CULPRIT, self.glyphs.culprit
        elif r.rank in self.stragglers:
            style, mark = base + STYLE_STRAGGLER, self.glyphs.straggler
        elif status == "failed":
            style = base + STYLE_FAILED
        elif status == "silent":
            style = base + STYLE_SILENT
        elif status == "ended":
            style = base + STYLE_ENDED
        if r.rank == self.cursor_rank and self.has_focus:
            style = style + STYLE_CURSOR
        elif r.rank == self.cursor_rank:
            style = style + Style(underline=True)
        text = mark + " ".join(self._cells(r)) + "  " + tail_clip(r.where or "-", WHERE_WIDTH)
        return Strip([Segment(text, style)]).crop_extend(scroll_x, scroll_x + width, style)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


# 256-colour ramp for the heat-strip: step time over the median of the shown window
HEAT_LEVELS: tuple[tuple[float, int], ...] = ((1.15, 34), (1.4, 148), (1.8, 214), (3.0, 202), (math.inf, 196))


def heat_level(ratio: float) -> int:
    for i, (upper, _) in enumerate(HEAT_LEVELS):
        if ratio <= upper:
            return i
    return len(HEAT_LEVELS) - 1


class HeatStrip(ScrollView, can_focus=False):
    """Rank × step: one character per step, coloured by step time over the median of the window."""

    DEFAULT_CSS = "HeatStrip { height: 1fr; }"
    LABEL = 7

    def __init__(self, glyphs: Glyphs, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.glyphs = glyphs
        self.snap: Snapshot | None = None
        self.median = 0.0
        self.last_step = 0
        self.first_step = 1
        self._window_for: tuple[int, int] | None = None

    def set_snapshot(self, snap: Snapshot) -> None:
        self.snap = snap
        self._window_for = None
        self.virtual_size = Size(max(1, self.scrollable_content_region.width), len(snap.ranks) + 1)
        self.refresh()

    def _window(self, width: int) -> None:
        """The steps shown (the last ``width - LABEL``) and the median own-work time over them."""
        snap = self.snap
        if snap is None or self._window_for == (id(snap), width):
            return
        self._window_for = (id(snap), width)
        cols = max(1, width - self.LABEL)
        self.last_step = max((r.series[-1].step for r in snap.ranks if r.series), default=0)
        lo = self.first_step = max(1, self.last_step - cols + 1)
        vals = sorted(p.work_ms for r in snap.ranks for p in r.series[-cols:] if p.step >= lo and p.work_ms is not None)
        self.median = vals[len(vals) // 2] if vals else 0.0

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        snap = self.snap
        if snap is None:
            return Strip.blank(width, base)
        self._window(width)
        cols = max(1, width - self.LABEL)
        lo = self.first_step
        if y == 0:
            head = (f"{'rank':>{self.LABEL - 1}} steps {lo}..{self.last_step}: own work per step (step time less the "
                    f"wait for peers and data) / median {self.median:.0f} ms")
            return Strip([Segment(head[:width], base + Style(dim=True))]).adjust_cell_length(width, base)
        i = int(self.scroll_y) + y - 1
        if i >= len(snap.ranks):
            return Strip.blank(width, base)
        r = snap.ranks[i]
        lab_style = base + (STYLE_CULPRIT if r.rank == snap.culprit else STYLE_STRAGGLER if r.rank in snap.stragglers else Style())
        segs = [Segment(f"{r.rank:>{self.LABEL - 1}} ", lab_style)]
        cells = [" "] * cols
        levels: list[int | None] = [None] * cols
        for p in r.series[-cols:]:
            j = p.step - lo
            if 0 <= j < cols and p.work_ms is not None and self.median > 0:
                lvl = heat_level(p.work_ms / self.median)
                levels[j] = lvl
                cells[j] = self.glyphs.heat[min(len(self.glyphs.heat) - 1, 2 + lvl)]
        run_start = 0
        for j in range(1, cols + 1):
            if j == cols or levels[j] != levels[run_start]:
                cur = levels[run_start]
                st = base if cur is None else base + Style(color=f"color({HEAT_LEVELS[cur][1]})", bold=cur >= 3)
                segs.append(Segment("".join(cells[run_start:j]), st))
                run_start = j
        return Strip(segs).adjust_cell_length(width, base)


METRICS: tuple[tuple[str, str, str], ...] = (
    ("loss", "loss", ".3f"), ("grad_norm", "grad norm", ".3f"), ("loss_scale", "loss scale", ".0f"),
    ("step_ms", "step ms", ".0f"), ("work_ms", "work ms", ".0f"),
)


def _series(points: tuple[Point, ...], metric: str) -> dict[int, float]:
    out = {}
    for p in points:
        v = getattr(p, metric)
        if v is not None and math.isfinite(v):
            out[p.step] = v
    return out


def spark(values: list[float | None], lo: float, hi: float, ramp: str) -> str:
    top = len(ramp) - 1
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        elif hi <= lo:
            out.append(ramp[max(1, top // 2)])
        else:
            out.append(ramp[max(1, min(top, 1 + round((v - lo) / (hi - lo) * (top - 1))))])
    return "".join(out)


class Plots(Widget):
    """Loss, grad norm, loss scale and step time over the last steps: the median over all ranks, the
    selected rank, and for step time the slowest rank; one sparkline each, live."""

    DEFAULT_CSS = "Plots { height: auto; }"
    LABEL = 24

    def __init__(self, glyphs: Glyphs, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.glyphs = glyphs
        self.snap: Snapshot | None = None
        self.selected: int | None = None

    def set_snapshot(self, snap: Snapshot, selected: int | None) -> None:
        self.snap, self.selected = snap, selected
        self.refresh()

    def lines_for(self, width: int) -> list[tuple[str, str, str]]:
        """(label, sparkline, range) rows; shared by render() and the tests."""
        snap = self.snap
        if snap is None or not snap.ranks:
            return [("waiting for step events", "", "")]
        cols = max(4, width - self.LABEL - 18)
        last = max((r.series[-1].step for r in snap.ranks if r.series), default=0)
        steps = list(range(max(1, last - cols + 1), last + 1))
        by_rank = {r.rank: r for r in snap.ranks}
        rows: list[tuple[str, str, str]] = []
        for metric, title, spec in METRICS:
            per = {r.rank: _series(r.series[-cols:], metric) for r in snap.ranks}
            med = [_med([s[k] for s in per.values() if k in s]) for k in steps]
            lines: list[tuple[str, list[float | None]]] = [(f"{title}: all (median)", med)]
            shown = []
            if self.selected is not None and self.selected in by_rank:
                shown.append(self.selected)
            if metric in ("step_ms", "work_ms"):
                means = {r: sum(s.values()) / len(s) for r, s in per.items() if s}
                if means:
                    slow = max(means, key=lambda r: means[r])
                    if slow not in shown:
                        shown.append(slow)
            for rk in shown:
                tag = " (slowest)" if metric in ("step_ms", "work_ms") and rk != self.selected else ""
                lines.append((f"  rank {rk}{tag}", [per[rk].get(k) for k in steps]))
            vals = [v for _, vs in lines for v in vs if v is not None]
            lo, hi = (min(vals), max(vals)) if vals else (0.0, 0.0)
            for label, vs in lines:
                cur = next((v for v in reversed(vs) if v is not None), None)
                rng = f" {fmt(cur, spec)} [{fmt(lo, spec)}..{fmt(hi, spec)}]" if vals else " -"
                rows.append((label, spark(vs, lo, hi, self.glyphs.spark), rng))
        return rows

    def render(self) -> Text:
        width = self.content_region.width or 80
        out = Text(no_wrap=True, overflow="crop")
        for i, (label, sp, rng) in enumerate(self.lines_for(width)):
            if i:
                out.append("\n")
            out.append(f"{label[: self.LABEL]:<{self.LABEL}}", style="bold" if not label.startswith(" ") else "")
            out.append(sp, style="color(39)")
            out.append(rng, style="dim")
        return out


def _med(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
