"""`msdoctor ckpt A B …`: compare checkpoints of several ranks (replica drift, naming, shapes, NaN).

Files given one by one form one group; files found in folders are grouped by their path inside the
folder (``rank_0/step_000020.ckpt`` pairs with ``rank_1/step_000020.ckpt``). In each group the first
readable file is the reference and every other file is compared with it. Rules CKPT601-605.
"""

from __future__ import annotations

import argparse
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.errors import UsageError


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help=".ckpt / .safetensors files, or per-rank folders (files paired by name)")
    p.add_argument("--tolerance", type=float, default=None,
                   help="largest max-abs difference still counted as identical (default 0: replicas are bitwise equal)")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("--dump-facts", metavar="F", help="write the facts snapshot to F")
    p.add_argument("--facts", metavar="F", help="replay the rules on a facts snapshot instead of reading checkpoints")
    p.add_argument("-v", "--verbose", action="store_true", help="all evidence and full fix text")  # fmt: skip


def file_rows(facts: Facts) -> list[dict[str, Any]]:
    groups = facts.get_known("ckpt.groups", {}) or {}
    rows = []
    for f in facts.get_known("ckpt.files", []) or []:
        group = f.get("group", "")
        status = "unreadable" if f.get("error") else "reference" if groups.get(group) == f["path"] else "compared"
        rows.append({"path": f["path"], "rank": f.get("rank"), "group": group, "format": f.get("format"),
                     "params": len(f.get("params") or {}), "status": status, "error": f.get("error")})  # fmt: skip
    return rows


def run(args: argparse.Namespace) -> int:
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import run_checks
    from msdoctor.report.render import exit_code, json_payload, print_json

    if args.tolerance is not None and not args.tolerance >= 0:
        raise UsageError(f"--tolerance must be a number >= 0, got {args.tolerance}")
    if args.facts:
        facts = Facts.load(args.facts, expect=("ckpt",))
    elif not args.paths:
        raise UsageError("give checkpoint files or folders (or --facts F)")
    else:
        from msdoctor.facts.checkpoint import collect_checkpoints

        facts = collect_checkpoints(args.paths)
    if args.dump_facts:
        facts.dump(args.dump_facts)
    rules = load_catalogue().select(source="checkpoint", kind="check")
    overrides = {r.id: {"tolerance": args.tolerance} for r in rules if args.tolerance is not None}
    ev = run_checks(rules, facts, overrides)
    rows = file_rows(facts)
    if args.json:
        print_json(json_payload("ckpt", ev.findings, ev.not_evaluated, files=rows,
                                groups=facts.get_known("ckpt.groups"), passed=ev.passed))  # fmt: skip
    else:
        _render(rows, ev, args.verbose)
    return int(exit_code(ev.findings))


def _render(rows: list[dict[str, Any]], ev: Any, verbose: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from msdoctor.report.render import console, render_findings

    out = console()
    table = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("file", "rank", "params", "status"):
        table.add_column(col)
    for r in rows:
        table.add_row(escape(r["path"]), "-" if r["rank"] is None else str(r["rank"]), str(r["params"]), r["status"])
    out.print(table)
    render_findings(ev.findings, ev.not_evaluated, out=out, verbose=verbose)
