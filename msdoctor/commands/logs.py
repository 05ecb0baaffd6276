"""`msdoctor logs PATH…`: the root cause across the logs of all ranks.

sources (log files of every rank) → facts (:mod:`msdoctor.facts.logs`) → the correlation rules
(COMM501–505, :mod:`msdoctor.checks.logs`) plus every signature rule of the catalogue → findings,
a per-rank timeline and the root-cause verdict.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import finding_from_hit, run_checks
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Finding, Hit, sort_findings
from msdoctor.errors import UsageError
from msdoctor.facts.logs import LogScan, collect

MAX_EVIDENCE = 5
TIMELINE_ROWS = 12


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="log files or folders (msrun --log_dir, plog, GLOG dirs)")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="all evidence, full fix text, every rank")
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel scanning processes (default: one per core)")
    p.add_argument("--engine", choices=("auto", "python"), default="auto",
                   help="line pre-filter: grep when installed (auto), or Python's re only")  # fmt: skip
    p.add_argument("--dump-facts", metavar="FILE", help="also write the collected facts snapshot to FILE")
    p.add_argument("--facts", metavar="FILE", help="replay the correlation from a facts snapshot instead of logs")


def signature_findings(scan: LogScan) -> list[Finding]:
    """One finding per signature rule over all files: a count, the ranks, the earliest lines as evidence."""
    cat = load_catalogue()
    agg: dict[str, dict[str, Any]] = {}
    # msrun's console repeats the lines of the workers and the scheduler: a line of the console written by
    # a process that has its own log file is counted there only.
    own = {str(s["pids"][0]) for s in scan.files if s.get("readable") and s.get("pids") and s["kind"] != "msrun"}
    own_rules = {rid for s in scan.files if s["kind"] != "msrun" for rid in (s.get("hits") or {})}
    for s in scan.files:
        rank = scan.file_rank.get(s["path"])
        echo = s["kind"] == "msrun" or bool(s.get("msrun_workers"))
        for rid, h in (s.get("hits") or {}).items():
            rule = cat.get(rid)
            if rule is None or (rule.role == "progress" and rule.severity.value == "info"):
                continue
            count = h["count"]
            if echo:
                count -= sum(n for pid, n in h.get("pids", {}).items() if pid in own or (pid == "-1" and rid in own_rules))
                if count <= 0:
                    continue
            a = agg.setdefault(rid, {"count": 0, "per_rank": {}, "firsts": []})
            a["count"] += count
            key = "launcher" if rank is None else str(rank)
            a["per_rank"][key] = a["per_rank"].get(key, 0) + count
            a["firsts"].append((h["first"].get("time") or float("inf"), s["path"], h["first"], rank))
    out: list[Finding] = []
    for rid, a in agg.items():
        rule = cat.get(rid)
        assert rule is not None
        firsts = sorted(a["firsts"], key=lambda t: (t[0], t[1]))
        ranks = sorted(int(k) for k in a["per_rank"] if k != "launcher")
        evidence = tuple(Evidence(text=f["text"], file=path, line=f["line"]) for _, path, f, _ in firsts[:MAX_EVIDENCE])
        where = f"on rank(s) {_short(ranks)}" if ranks else "in launcher/scheduler logs"
        first = firsts[0][2]
        hit = Hit(
            message=f"{a['count']} line(s) {where}",
            evidence=evidence,
            rank=ranks[0] if len(ranks) == 1 and "launcher" not in a["per_rank"] else None,
            data={"ranks": ranks[:1000], "per_rank": dict(list(a["per_rank"].items())[:1000]),
                  **({"groups": first["groups"]} if first.get("groups") else {})},  # fmt: skip
        )
        f = finding_from_hit(rule, hit)
        f.count = a["count"]
        out.append(f)
    return sort_findings(out)


def timeline(facts: Facts, verdict_states: Mapping[str, str]) -> list[dict[str, Any]]:
    """Per rank: first anomaly (time, rule), last progress (step, line), how the log ends."""
    rows = []
    for r, v in sorted((facts.get_known("logs.ranks") or {}).items(), key=lambda kv: int(kv[0])):
        fa, p = v.get("first_anomaly"), v.get("progress")
        rows.append({
            "rank": int(r),
            "first_anomaly": None if not fa else {k: fa.get(k) for k in ("time", "ts", "rule", "role", "file", "line", "text")},
            "last_progress": None if not p else {k: p.get(k) for k in ("step", "time", "ts", "file", "line", "text")},
            "last_time": v.get("last_time"),
            "ends": verdict_states.get(r, "silent"),
            "files": v.get("files", []),
        })  # fmt: skip
    for m in facts.get_known("logs.missing_ranks") or []:
        rows.append({"rank": m, "first_anomaly": None, "last_progress": None, "last_time": None, "ends": "missing", "files": []})
    return sorted(rows, key=lambda row: row["rank"])


def root_cause(findings: list[Finding]) -> dict[str, Any]:
    for f in findings:
        rc = f.data.get("root_cause")
        if rc:
            return {"rank": rc["rank"], "rule": f.rule, "signature": rc.get("signature"), "message": f.message,
                    "evidence": [e.to_dict() for e in f.evidence], "consequences": rc.get("consequences", []),
                    "chain": rc.get("chain", [])}  # fmt: skip
        if "reason" in f.data and f.data.get("root_cause", "absent") is None:
            return {"rank": None, "reason": f.data["reason"], "rule": f.rule}
    return {"rank": None, "reason": "no rank ends in an error or a collective failure: nothing to correlate"}


def run(args: argparse.Namespace) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    from msdoctor.checks.logs import verdict
    from msdoctor.report.render import exit_code, json_payload, print_json

    catalogue = load_catalogue()
    if bool(args.paths) == bool(args.facts):
        raise UsageError("give log PATHs or --facts FILE (one of them)")
    if args.facts:  # replay: the verdict from the snapshot; signature findings need the logs themselves
        facts = Facts.load(args.facts, expect=("logs",))
        scan = LogScan(skipped=list(facts.get_known("logs.skipped") or []))
    else:
        facts, scan = collect(args.paths, catalogue, jobs=args.jobs, engine=args.engine)
    if args.dump_facts:
        facts.dump(args.dump_facts)
    ev = run_checks(catalogue.select(source="log", kind="check"), facts)
    correlation = [f for f in ev.findings if f.data.get("root_cause") or "reason" in f.data]
    others = [f for f in ev.findings if f not in correlation]
    findings = correlation + sort_findings(others + signature_findings(scan))
    states = verdict(facts, {}).get("states", {}) if facts.is_known("logs.ranks") else {}
    rows = timeline(facts, states)
    rc = root_cause(findings)
    if args.json:
        print_json(json_payload("logs", findings, ev.not_evaluated, root_cause=rc, timeline=rows,
                                skipped=scan.skipped, files=facts.get_known("logs.files") or []))  # fmt: skip
    else:
        _render(findings, ev.not_evaluated, rc, rows, scan, args.verbose)
    return int(exit_code(findings))


def _render(findings: list[Finding], not_evaluated: list[Any], rc: Mapping[str, Any], rows: list[dict[str, Any]],
            scan: LogScan, verbose: bool) -> None:  # fmt: skip
    from rich.markup import escape

    from msdoctor.report.render import console, render_findings

    out = console()
    n_files = len(scan.files)
    ranks = [r for r in rows if r["ends"] != "missing"]
    out.print(f"[bold]msdoctor logs[/]: {n_files} file(s), {len(ranks)} rank(s)")
    if rc.get("rank") is not None:
        out.print(f"[bold red]Root cause: rank {rc['rank']}[/] ({rc['rule']}) — {escape(rc['message'])}")
        for step in rc.get("chain", []):
            out.print(f"  • {escape(step)}")
    else:
        out.print(f"[bold]Root cause:[/] not determined — {escape(str(rc.get('reason')))}")
    shown = rows if verbose else _interesting(rows, rc.get("rank"))
    out.print("[bold]Timeline[/] (per rank: how its log ends, first anomaly, last progress)")
    for r in shown:
        fa, lp = r["first_anomaly"], r["last_progress"]
        first = f"{(fa.get('ts') or '?')[11:19]} {fa.get('rule') or 'error'}" if fa else "none"
        prog = f"step {lp.get('step')} @ {(lp.get('ts') or '?')[11:19]}" if lp else "none"
        out.print(f"  rank {r['rank']:>4}  {r['ends']:<12} first: {escape(first):<18} progress: {escape(prog)}")
    if len(shown) < len(rows):
        out.print(f"  … {len(rows) - len(shown)} more rank(s) (use -v or --json)")
    out.print("")
    render_findings(findings, not_evaluated, out=out, verbose=verbose)
    if scan.skipped:
        out.print(f"[dim]skipped: {len(scan.skipped)} file(s)/part(s) not readable[/]")
        for s in scan.skipped[: (None if verbose else 5)]:
            loc = f"{s.get('file')}" + (f":{s['line']}" if s.get("line") else "")
            out.print(f"    [dim]{escape(loc)}: {escape(str(s.get('reason')))}[/]")


def _interesting(rows: list[dict[str, Any]], culprit: int | None) -> list[dict[str, Any]]:
    if len(rows) <= TIMELINE_ROWS:
        return rows
    pick = [r for r in rows if r["rank"] == culprit or r["ends"] in ("missing", "root", "unclassified")][: TIMELINE_ROWS // 2]
    rest = [r for r in rows if r not in pick][: TIMELINE_ROWS - len(pick)]
    return sorted(pick + rest, key=lambda r: r["rank"])


def _short(ranks: list[int], n: int = 8) -> str:
    return ", ".join(map(str, ranks[:n])) + (f", … ({len(ranks)} ranks)" if len(ranks) > n else "")
