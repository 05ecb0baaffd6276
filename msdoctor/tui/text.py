"""Making input safe to show: control characters stripped, Rich markup never interpreted.

Every string the monitor shows that came from a run (log lines, paths, finding text, stack dumps)
goes through :func:`clean` / :func:`line` and is wrapped in a :class:`rich.text.Text`, never parsed as
markup: a ``[/x]`` in a finding is shown as written. :class:`Glyphs` holds the few non-ASCII marks
the screens use, with an ASCII-only set for terminals that cannot show anything else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.markup import escape
from rich.text import Text

# C0 controls except \t \n, DEL, C1 controls; ANSI escape sequences first so their tails go too
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(s: object, keep_newlines: bool = True) -> str:
    """The text without terminal escapes or control characters (tabs become spaces)."""
    out = _CTRL.sub("", _ANSI.sub("", str(s)).replace("\r\n", "\n").replace("\t", "    "))
    return out if keep_newlines else " ".join(out.split("\n"))


def line(s: object, width: int | None = None) -> str:
    """One display line: controls stripped, newlines joined, clipped to ``width`` (keeping the start)."""
    out = clean(s, keep_newlines=False)
    if width is not None and len(out) > width:
        out = out[: max(0, width - 1)] + "~"
    return out


def tail_clip(s: object, width: int) -> str:
    """Keep the end (``file:line func``) of a long position."""
    out = line(s)
    return out if len(out) <= width else "~" + out[-(width - 1):]


def safe_text(s: object, style: str = "") -> Text:
    """A Text that shows ``s`` literally (no markup, no control characters)."""
    return Text(clean(s), style=style)


def markup_safe(s: object) -> str:
    """For the few places that take markup strings (notifications, titles): escaped and cleaned."""
    return escape(line(s))


@dataclass(frozen=True)
class Glyphs:
    ellipsis: str
    arrow: str
    bullet: str
    spark: str  # low → high, for one-row sparklines
    heat: str  # low → high, for the step-time heat-strip (always drawn with colour as well)
    culprit: str
    straggler: str

    @staticmethod
    def for_terminal(ascii_only: bool) -> Glyphs:
        if ascii_only:
            return Glyphs("...", "->", "*", " _.-~=*#", " .:-=+*#", "!", "~")
        return Glyphs("…", "→", "•", " ▁▂▃▄▅▆▇█", " .:-=+*#", "✗", "~")
