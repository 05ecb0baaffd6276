"""The closing report of a run: findings, the first anomaly per rank, and the root cause.

Shared by ``msdoctor report`` and ``msdoctor watch``; reads nothing itself except through
:func:`diagnose_dir`, which validates the run directory (bad input → :class:`InputError`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.model import Finding, NotEvaluated, sort_findings
from msdoctor.engine.rootcause import Consequence, RootCause
from msdoctor.errors import InputError
from msdoctor.facts.run import load_supervisor_state
from msdoctor.watch import events
from msdoctor.watch.supervisor import FINDINGS_FILE, SuperviseOptions, Supervisor


def check_run_dir(run_dir: Path) -> None:
    """One clear line (exit 2) for a path that is not a run directory with event files."""
    if not run_dir.exists():
        raise InputError(f"{run_dir}: no such run directory")
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: not a directory (expected a run directory with events/rank_<r>.jsonl)")
    files = events.rank_files(run_dir)
    if not files:
        raise InputError(f"{run_dir}: no event files (expected {events.EVENTS_DIR}/rank_<r>.jsonl written by the watchdog)")
    if all(p.stat().st_size == 0 for p in files.values()):
        raise InputError(f"{run_dir}: the event files are empty (no rank started its watchdog)")


def read_live_findings(run_dir: Path) -> tuple[dict[tuple[str, Any], dict[str, Any]], int]:
    """Latest version of each rule × rank from ``RUN/findings.jsonl``; and the unreadable-line count."""
    tail = events.Tail(run_dir / FINDINGS_FILE)
    out: dict[tuple[str, Any], dict[str, Any]] = {}
    for d in tail.read():
        if d.get("retracted") is True:
            out.pop((str(d.get("rule")), d.get("rank")), None)
        elif isinstance(d.get("rule"), str) and d.get("severity") in ("error", "warning", "info"):
            out[(d["rule"], d.get("rank"))] = d
        else:
            tail.skipped += 1
    return out, tail.skipped


def live_findings(run_dir: Path) -> list[Finding]:
    """What the supervisor found, as a list: the latest version per rule × rank, retractions applied
    (``RUN/findings.jsonl`` itself keeps every update, one line each)."""
    latest, _ = read_live_findings(run_dir)
    out = []
    for d in latest.values():
        try:
            out.append(Finding.from_dict(d))
        except (KeyError, ValueError, TypeError):
            continue  # a malformed line: read_live_findings already counted what it could not parse
    return sort_findings(out)


def diagnose_dir(run_dir: Path) -> tuple[Supervisor, list[Finding], list[NotEvaluated], list[str]]:
    """Post-mortem (or one live pass) over a run dir, merged with what the live supervisor wrote."""
    check_run_dir(run_dir)
    skipped: list[str] = []
    sup = Supervisor(run_dir, SuperviseOptions(), write=False)
    reason = load_supervisor_state(sup.collector)
    if reason:
        skipped.append(reason)
    sup.poll(running=None)
    if not any(st.last_seen_t is not None for st in sup.collector.ranks.values()):
        # every line was garbage: "no findings" and exit 0 would pass off an unread run as a clean one
        n = len(events.rank_files(run_dir))
        raise InputError(f"{run_dir}: no readable event in {n} event file(s) "
                         f"({sup.collector.skipped} unreadable line(s))")
    live, bad = read_live_findings(run_dir)
    if bad:
        skipped.append(f"{run_dir / FINDINGS_FILE}: {bad} unreadable line(s) skipped")
    if sup.collector.skipped:
        skipped.append(f"{events.events_dir(run_dir)}: {sup.collector.skipped} unreadable event line(s) skipped")
    for tail in sup.collector.tails.values():
        try:
            rest = tail.path.stat().st_size - tail.offset
        except OSError:
            continue
        if rest > 0:
            skipped.append(f"{tail.path}: incomplete last line ({rest} bytes) ignored")
    findings = {(f.rule, f.rank): f for f in sup.current()}
    # post-mortem the rules see every event; a rule they evaluated decides. A live finding is kept
    # only for a rule that cannot be evaluated now (e.g. liveness known only while the job ran)
    not_now = {n.rule for n in sup.not_evaluated}
    for key, d in live.items():
        if key in findings:
            findings[key].data.setdefault("first_seen", d.get("first_seen"))
            continue
        if key[0] not in not_now:
            continue
        try:
            findings[key] = Finding.from_dict(d)
        except (KeyError, ValueError, TypeError):
            skipped.append(f"{run_dir / FINDINGS_FILE}: finding {key} malformed, skipped")
    return sup, sort_findings(list(findings.values())), sup.not_evaluated, skipped


def _role(f: Finding) -> str:
    role = f.data.get("role")
    if isinstance(role, str):
        return role
    rule = load_catalogue().get(f.rule)
    return rule.role if rule is not None else "root"


def _when(f: Finding) -> tuple[float, float]:
    step = float(f.step) if isinstance(f.step, int) else math.inf
    t = f.data.get("t") or f.data.get("first_seen")
    return step, float(t) if isinstance(t, (int, float)) else math.inf


def timeline(findings: list[Finding]) -> list[dict[str, Any]]:
    """The first anomaly of each rank (by step, then time), in the order they appeared."""
    first: dict[int, Finding] = {}
    for f in findings:
        if f.rank is None:
            continue
        cur = first.get(f.rank)
        if cur is None or _when(f) < _when(cur):
            first[f.rank] = f
    rows = [
        {"rank": r, "step": f.step, "t": f.data.get("t"), "rule": f.rule, "role": _role(f), "message": f.message}
        for r, f in first.items()
    ]
    return sorted(rows, key=lambda d: (d["step"] if d["step"] is not None else math.inf, d["t"] or math.inf, d["rank"]))


def root_cause(findings: list[Finding]) -> RootCause:
    """The most severe, earliest finding whose role is a root (consequences never are)."""
    roots = [f for f in findings if _role(f) == "root"]
    if not roots:
        why = "no finding names a root cause" if findings else "no findings: nothing to correlate"
        return RootCause.undetermined(why)
    best = min(roots, key=lambda f: (f.severity.rank_order, *_when(f)))
    consequences = [
        Consequence(rank=f.rank, rule=f.rule, message=f.message)
        for f in findings
        if f is not best and (_role(f) == "consequence" or (f.rule == best.rule and f.rank != best.rank))
    ]
    return RootCause.from_finding(best, consequences=consequences)


def ranks_summary(sup: Supervisor) -> list[dict[str, Any]]:
    out = []
    for k, r in sorted(sup.collector.last_ranks.items(), key=lambda kv: int(kv[0])):
        if r.get("ended") is not None:
            status = r.get("end_status") or "ended"
        elif r.get("alive"):
            status = "running"
        elif r.get("alive") is False:
            status = "vanished"
        else:
            status = "unknown"
        out.append({"rank": int(k), "status": status, "last_step": r.get("last_step"), "phase": r.get("phase")})
    return out


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
    for s in report.get("skipped", []):
        out.print(f"[dim]skipped: {escape(s)}[/]")



REPORT_FILE = "report.json"


def report_extra(run_dir: Path, sup: Supervisor, findings: list[Finding], skipped: list[str]) -> dict[str, Any]:
    """What a closing report adds to the findings: ranks, first anomaly per rank, root cause, skipped."""
    return {
        "run_dir": str(run_dir),
        "ranks": ranks_summary(sup),
        "timeline": timeline(findings),
        "root_cause": root_cause(findings).to_dict(),
        "skipped": skipped,
    }


def closing_report(run_dir: Path) -> dict[str, Any]:
    """The report's JSON object (findings, timeline, root cause, ranks, skipped) for one run dir."""
    sup, findings, not_evaluated, skipped = diagnose_dir(run_dir)
    return {
        "command": "report",
        "findings": [f.to_dict() for f in findings],
        "not_evaluated": [n.to_dict() for n in not_evaluated],
        **report_extra(run_dir, sup, findings, skipped),
    }


def write_closing_report(run_dir: Path) -> str | None:
    """``RUN/report.json`` at the end of supervision; returns why it could not be written, if so."""
    try:
        payload = closing_report(run_dir)
        (run_dir / REPORT_FILE).write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    except (InputError, OSError) as exc:
        return str(exc)
    return None
