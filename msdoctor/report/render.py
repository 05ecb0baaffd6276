"""Views: findings to the terminal (rich) or to one JSON object on stdout (orjson).

Views never decide: they render what the engine returned, and the exit code follows the
findings' severities (see :func:`exit_code`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import IO, Any, cast

import orjson

from msdoctor.engine.model import Finding, NotEvaluated, Severity
from msdoctor.errors import ExitCode


def exit_code(findings: Iterable[Finding]) -> ExitCode:
    return ExitCode.FINDINGS if any(f.severity is Severity.ERROR for f in findings) else ExitCode.OK


def utf8_ok(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return enc in ("utf8", "utf_8") and os.environ.get("MSDOCTOR_ASCII") != "1"


def marks() -> dict[str, str]:
    if utf8_ok():
        return {"error": "✗", "warning": "!", "info": "i", "ok": "✓", "skip": "?"}
    return {"error": "[x]", "warning": "[!]", "info": "[i]", "ok": "[ok]", "skip": "[?]"}


def json_payload(
    command: str,
    findings: list[Finding],
    not_evaluated: list[NotEvaluated] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "command": command,
        "findings": [f.to_dict() for f in findings],
        "not_evaluated": [n.to_dict() for n in (not_evaluated or [])],
    }
    payload.update(extra)
    return payload


_RAW_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _json_safe(v: Any) -> Any:
    """JSON escapes C0 controls itself; DEL, the C1 controls (U+009B is a CSI to some terminals) and
    the bidi overrides would pass raw: show them as ``\x9b`` like the text view does."""
    if isinstance(v, str):
        return _RAW_IN_JSON.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 0x100
                                else f"\\u{ord(m.group(0)):04x}", v) if _RAW_IN_JSON.search(v) else v
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_safe(x) for x in v]
    return v


def print_json(payload: dict[str, Any]) -> None:
    sys.stdout.buffer.write(
        orjson.dumps(_json_safe(payload),
                     option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    )
    sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()


# Layout width for tables and markdown when stdout is not a terminal and COLUMNS is unset: wide enough
# that no path in a table is cut, while text itself is never hard-wrapped (soft wrap), as ruff and
# pytest do when piped.
PIPE_WIDTH = 4096


class _TrimmedLines:
    """A text stream that drops the spaces rich pads lines with up to the layout width (tables, code
    blocks), so that a wide layout width costs nothing in piped output."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.pending = ""  # trailing spaces held back until we know whether a newline follows

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        text = self.pending + text
        body = text.rstrip(" ")
        self.pending = text[len(body) :]
        self.stream.write(re.sub(r" +\n", "\n", body))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def console_width(environ: Any = None, isatty: bool | None = None) -> int | None:
    """The width text is laid out to: None lets rich measure the terminal; a pipe gets ``COLUMNS`` or
    :data:`PIPE_WIDTH`."""
    environ = os.environ if environ is None else environ
    if isatty is None:
        isatty = sys.stdout.isatty()
    cols = str(environ.get("COLUMNS", "")).strip()
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    return None if isatty else PIPE_WIDTH


def console() -> Any:
    """A rich Console for stdout: on a terminal it wraps at the terminal's width (or ``COLUMNS``); on a
    pipe or file it never hard-wraps a line (paths and log lines stay whole and greppable), and
    ``COLUMNS`` still sets the width of tables. Every string it renders (printed text, table cells) has
    its control characters shown as ``\x1b`` first: log lines, op names, paths and parameter names come
    from input, and an ``ESC]0;…BEL`` or ``ESC[2J`` in a worker log must not reach the user's terminal."""
    from rich.console import Console

    from msdoctor.safeio import printable

    class SafeConsole(Console):
        def render_str(self, text: str, **kwargs: Any) -> Any:  # type: ignore[override]
            return super().render_str(printable(text, keep_newlines=True), **kwargs)

    if sys.stdout.isatty():
        return SafeConsole(highlight=False, soft_wrap=False, width=console_width(isatty=True))
    return SafeConsole(file=cast(IO[str], _TrimmedLines(sys.stdout)), highlight=False, soft_wrap=True,
                       width=console_width(isatty=False))  # fmt: skip


STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def short_fix(fix: str) -> str:
    """The fix's first line, completed to the end of its sentence and unwrapped: the rule files
    hard-wrap at ~100 columns, so the bare first line stops mid-sentence ("… pin the training
    processes to")."""
    text = " ".join(fix.split())
    first = " ".join((fix.strip().splitlines() or [""])[0].split())
    end = _SENTENCE_END.search(text, len(first))
    return text[: end.start()] if end else text


def render_findings(
    findings: list[Finding],
    not_evaluated: list[NotEvaluated] | None = None,
    *,
    out: Any = None,
    verbose: bool = False,
    max_evidence: int = 3,
) -> None:
    """Print findings, most severe first: mark, rule, rank/step, message, evidence, fix."""
    from rich.markup import escape

    out = out or console()
    m = {k: escape(v) for k, v in marks().items()}  # "[x]" would otherwise be read as markup
    if not findings and not_evaluated:  # not a clean bill of health: part of the rules could not run
        out.print(f"{m['skip']} no findings in what could be checked; {len(not_evaluated)} rule(s) could not be evaluated")
    elif not findings:
        out.print(f"[green]{m['ok']}[/] no findings")
    for f in findings:
        where = []
        if f.rank is not None:
            where.append(f"rank {f.rank}")
        if f.step is not None:
            where.append(f"step {f.step}")
        loc = f" ({', '.join(where)})" if where else ""
        count = f" ×{f.count}" if f.count > 1 else ""
        sev = f.severity.value
        out.print(f"[{STYLE[sev]}]{m[sev]} {f.rule}[/] {escape(f.title)}{loc}{count}")
        if f.message and f.message != f.title:
            out.print(f"    {escape(f.message)}")
        for e in f.evidence[: (None if verbose else max_evidence)]:
            out.print(f"    [dim]evidence:[/] {escape(str(e))}", soft_wrap=True)  # a quoted log line stays whole
        if not verbose and len(f.evidence) > max_evidence:
            out.print(f"    [dim]… {len(f.evidence) - max_evidence} more (use -v)[/]")
        if f.fix:
            out.print(f"    [green]fix:[/] {escape(f.fix if verbose else short_fix(f.fix))}")
    if not_evaluated:
        if findings:  # without findings the first line already said it
            out.print(f"[dim]{m['skip']} {len(not_evaluated)} rule(s) not evaluated (facts missing)[/]")
        if verbose:
            for n in not_evaluated:
                out.print(f"    [dim]{n.rule}: {escape(n.reason)}[/]")
    counts = {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
    out.print(f"[bold]{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info[/]")
