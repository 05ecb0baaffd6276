"""The closing report of a run: reads a run directory and renders :func:`diagnosis.diagnose`'s verdict.

Shared by ``msdoctor report``, ``msdoctor watch`` and the supervisor's closing ``RUN/report.json``:
all of them call :func:`load` (bad input → :class:`InputError`), which reads the run directory
through :mod:`msdoctor.rundir` and hands the facts and the supervisor's findings to the pure
:func:`msdoctor.watch.diagnosis.diagnose`. It never builds a supervisor.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from msdoctor import rundir
from msdoctor.engine.model import Finding, sort_findings
from msdoctor.errors import InputError
from msdoctor.facts.run import RunCollector, load_supervisor_state
from msdoctor.rundir import FINDINGS_FILE, REPORT_FILE
from msdoctor.watch.diagnosis import Diagnosis, diagnose, root_cause, timeline

__all__ = ["FINDINGS_FILE", "REPORT_FILE", "Diagnosis", "check_run_dir", "closing_report", "diagnose_dir", "live_findings",
           "load", "render_extra", "root_cause", "timeline", "write_closing_report"]


def check_run_dir(run_dir: Path) -> None:
    """One clear line (exit 2) for a path that is not a run directory with event files."""
    if not run_dir.exists():
        raise InputError(f"{run_dir}: no such run directory")
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: not a directory (expected a run directory with events/rank_<r>.jsonl)")
    files = rundir.rank_files(run_dir)
    if not files:
        raise InputError(f"{run_dir}: no event files (expected {rundir.EVENTS_DIR}/rank_<r>.jsonl written by the watchdog)")
    regular = [p for p in files.values() if rundir.not_regular(p) is None]
    if not regular:
        raise InputError(f"{run_dir}: no event file is a regular file ({rundir.not_regular(next(iter(files.values())))})")
    if all(p.stat().st_size == 0 for p in regular):
        raise InputError(f"{run_dir}: the event files are empty (no rank started its watchdog)")


def live_findings(run_dir: Path) -> list[Finding]:
    """What the supervisor found, as a list: the latest version per rule × rank, retractions applied
    (``RUN/findings.jsonl`` itself keeps every update, one line each)."""
    out = []
    for d in rundir.fold_findings(run_dir).latest.values():
        try:
            out.append(Finding.from_dict(d))
        except (KeyError, ValueError, TypeError, AttributeError):
            continue  # a malformed line: the report counts what it could not parse
    return sort_findings(out)


def read_collector(run_dir: Path) -> tuple[RunCollector, list[str]]:
    """Every event of a run directory (and what the supervisor did); what could not be read."""
    skipped: list[str] = []
    col = RunCollector(run_dir)
    reason = load_supervisor_state(col)
    if reason:
        skipped.append(reason)
    while col.poll():
        pass
    return col, skipped


def coverage(col: RunCollector) -> list[str]:
    """What of the event files was not read, and what it held (so a report says what was lost)."""
    out: list[str] = []
    for tail in col.tails.values():
        if tail.problem:
            out.append(tail.problem)
        held = Counter(w.removeprefix("unreadable line: ") for w in tail.lost if w.startswith("unreadable line: "))
        if tail.skipped:
            what = ", ".join(f"{n} × {w}" if n > 1 else w for w, n in held.most_common(5))
            out.append(f"{tail.path}: {tail.skipped} unreadable event line(s) skipped" + (f" ({what})" if what else ""))
        out.extend(f"{tail.path}: {w}" for w in tail.lost if not w.startswith("unreadable line: "))
        rest, cut = tail.pending()
        if rest > 0:
            out.append(f"{tail.path}: incomplete last line ({rest} bytes) ignored: {cut} lost")
    return out


def load(run_dir: Path) -> tuple[Diagnosis, RunCollector]:
    """Post-mortem (or one live pass) over a run dir, keeping what the live supervisor named."""
    check_run_dir(run_dir)
    col, skipped = read_collector(run_dir)
    if not any(st.last_seen_t is not None for st in col.ranks.values()):
        # every line was garbage: "no findings" and exit 0 would pass off an unread run as a clean one
        n = len(rundir.rank_files(run_dir))
        raise InputError(f"{run_dir}: no readable event in {n} event file(s) ({col.skipped} unreadable line(s))")
    fold = rundir.fold_findings(run_dir)
    if fold.problem:
        skipped.append(fold.problem)
    if fold.skipped:
        skipped.append(f"{run_dir / FINDINGS_FILE}: {fold.skipped} unreadable line(s) skipped")
    diag = diagnose(col.facts(), fold.latest)
    diag.skipped = skipped + coverage(col) + [f"{run_dir / FINDINGS_FILE}: {b}" for b in diag.skipped]
    diag.coverage = {
        "event_files": len(col.tails),
        "events": sum(col.events_read.values()),
        "events_per_rank": {str(r): n for r, n in sorted(col.events_read.items())},
        "unreadable_lines": col.skipped,
        "bytes_cut": sum(t.pending()[0] for t in col.tails.values()),
        "unread_files": [t.problem for t in col.tails.values() if t.problem],
        "supervisor_findings": len(fold.latest),
    }
    return diag, col


def diagnose_dir(run_dir: Path) -> Diagnosis:
    return load(run_dir)[0]


def render_extra(out: Any, report: dict[str, Any]) -> None:
    """Text view of the ranks, the timeline and the root cause (after the findings)."""
    from rich.markup import escape

    if report.get("ranks"):
        out.print("[bold]ranks[/]: " + ", ".join(
            f"{r['rank']} {r['status']} " + ("(no step)" if r["last_step"] is None else f"(step {r['last_step']})")
            for r in report["ranks"]))
    if report.get("timeline"):
        out.print("[bold]timeline[/] (first anomaly per rank):")
        for row in report["timeline"]:
            out.print(f"    step {row['step']}  rank {row['rank']}  {row['rule']} ({row['role']}): {escape(row['message'])}")
    rc = report.get("root_cause")
    if rc and rc.get("determined") and rc.get("rule"):
        where = f"rank {rc['rank']}" if rc["rank"] is not None else "all ranks"
        out.print(f"[bold]root cause[/]: {rc['rule']} on {where} at step {rc['step']}: {escape(rc['message'])}")
    cov = report.get("coverage")
    if cov:
        unread = f", {len(cov['unread_files'])} file(s) not read" if cov.get("unread_files") else ""
        out.print(f"[dim]read: {cov['events']} event(s) from {cov['event_files']} event file(s), "
                  f"{cov['unreadable_lines']} unreadable line(s), {cov['bytes_cut']} byte(s) cut{unread}; "
                  f"{cov['supervisor_findings']} finding(s) named by the supervisor[/]")  # fmt: skip
    for s in report.get("skipped", []):
        out.print(f"[dim]skipped: {escape(s)}[/]")


def closing_report(run_dir: Path, command: str = "report") -> dict[str, Any]:
    """The report's JSON object (findings, timeline, root cause, ranks, skipped) for one run dir."""
    diag = diagnose_dir(run_dir)
    return {
        "command": command,
        "findings": [f.to_dict() for f in diag.findings],
        "not_evaluated": [n.to_dict() for n in diag.not_evaluated],
        **diag.extra(str(run_dir)),
    }


def write_closing_report(run_dir: Path) -> str | None:
    """``RUN/report.json`` at the end of supervision; returns why it could not be written, if so."""
    try:
        payload = closing_report(run_dir)
        data = orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
        rundir.write_replace(run_dir / REPORT_FILE, data)
    except (InputError, OSError) as exc:
        return str(exc)
    return None
