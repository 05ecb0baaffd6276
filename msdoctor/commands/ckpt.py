"""`msdoctor ckpt A B …`: compare checkpoints of several ranks (replica drift, naming, shapes, NaN).

Files given one by one form one group; files found in folders are grouped by their path inside the
folder with the rank taken out (``rank_0/step_000020.ckpt`` pairs with ``rank_1/step_000020.ckpt``, and
``net_rank_0.ckpt`` with ``net_rank_1.ckpt`` in one flat folder). In each group the first complete
readable file is the reference and every other file is compared with it. Rules CKPT601-606.

The summary says what was read: files, tensors read of those present, comparisons made. When not one
tensor could be read the input was not understood: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError, UsageError


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help=".ckpt / .safetensors files, or per-rank folders (files paired by name)")
    p.add_argument("--tolerance", type=float, default=None,
                   help="largest max-abs difference still counted as identical (default 0: replicas are bitwise equal)")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("--dump-facts", metavar="F", help="write the facts snapshot to F")
    p.add_argument("--facts", metavar="F", help="replay the rules on a facts snapshot instead of reading checkpoints")
    p.add_argument("-v", "--verbose", action="store_true", help="all evidence and full fix text")  # fmt: skip


def file_rows(facts: Facts, findings: Sequence[Any] = ()) -> list[dict[str, Any]]:
    from msdoctor.facts.checkpoint import complete

    cut = {f.data.get("file") for f in findings if f.rule == CUT_RULE}

    groups = facts.get_known("ckpt.groups", {}) or {}
    files = facts.get_known("ckpt.files", []) or []
    size = {g: sum(1 for f in files if f.get("group", "") == g and not f.get("duplicate_of")) for g in groups}
    rows = []
    for f in files:
        group = f.get("group", "")
        if f.get("duplicate_of"):
            status = f"same file as {f['duplicate_of']}"
        elif f.get("error") and not (f.get("framing") or {}).get("truncated"):
            status = "unreadable"
        elif (not complete(f) and "read" in f) or f["path"] in cut:
            status = "incomplete"
        elif size.get(group, 0) < 2:
            status = "alone (nothing to compare)"
        else:
            status = "reference" if groups.get(group) == f["path"] else "compared"
        params = f.get("read", len(f.get("params") or {}))
        rows.append({"path": f["path"], "rank": f.get("rank"), "group": group, "format": f.get("format"),
                     "params": params, "present": f.get("present"), "status": status, "error": f.get("error"),
                     "duplicate_of": f.get("duplicate_of")})  # fmt: skip
    return rows


CUT_RULE = "CKPT606"


def coverage(facts: Facts, findings: Sequence[Any] = ()) -> dict[str, Any]:
    """What was read and what could not be: files, tensors (those a cut file lacks against its replica
    included), comparisons."""
    files = facts.get_known("ckpt.files", []) or []
    groups = facts.get_known("ckpt.groups", {}) or {}
    own = [f for f in files if not f.get("duplicate_of")]
    read = [f for f in own if not f.get("error")]
    compared = [f for f in read if groups.get(f.get("group", "")) not in (None, f["path"])]
    return {
        "files": len(files),
        "files_read": len(read),
        "files_unreadable": len(own) - len(read),
        "duplicates": len(files) - len(own),
        "tensors_read": sum(f.get("read", len(f.get("params") or {})) for f in own),
        "tensors_present": sum(f["present"] for f in own if isinstance(f.get("present"), int)),
        "tensors_present_unknown": sum(1 for f in own if not isinstance(f.get("present"), int)),
        "tensors_not_read": sum(
            max(len(f.data.get("not_read") or []), (f.data.get("present") or 0) - (f.data.get("read") or 0))
            for f in findings if f.rule == CUT_RULE
        ),
        "groups": len(groups),
        "comparisons": len(compared),
    }


def coverage_line(c: dict[str, Any]) -> str:
    parts = [f"read {c['files_read']} of {c['files'] - c['duplicates']} file(s)"]
    present = f" of {c['tensors_present']} present" if c["tensors_present"] else ""
    unknown = f" (+ {c['tensors_present_unknown']} file(s) of unknown size)" if c["tensors_present_unknown"] else ""
    lost = f", {c['tensors_not_read']} not read from cut file(s)" if c.get("tensors_not_read") else ""
    parts.append(f"{c['tensors_read']} tensor(s) read{present}{unknown}{lost}")
    parts.append(f"{c['comparisons']} file(s) compared with a reference in {c['groups']} group(s)")
    if c["duplicates"]:
        parts.append(f"{c['duplicates']} path(s) named a file already given (read once)")
    return "; ".join(parts)


def _nothing_read(facts: Facts) -> str | None:
    files = facts.get_known("ckpt.files", []) or []
    own = [f for f in files if not f.get("duplicate_of")]
    # A file whose framing shows tensors is a checkpoint even when its reader failed (cut inside a
    # tensor): that is CKPT606's finding, not unreadable input.
    if any(f.get("params") or (f.get("present") or 0) > 0 for f in own):
        return None
    first = own[0] if own else None
    why = f"{first['path']}: {first.get('error') or 'no tensor in it'}" if first else "no file"
    more = f" (and {len(own) - 1} more file(s))" if len(own) > 1 else ""
    return f"no tensor could be read: {why}{more}"


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
    nothing = _nothing_read(facts)
    if nothing is not None:  # input that yields nothing understood is not a verdict (issue 13)
        raise InputError(nothing)
    rules = load_catalogue().select(source="checkpoint", kind="check")
    overrides = {r.id: {"tolerance": args.tolerance} for r in rules if args.tolerance is not None}
    ev = run_checks(rules, facts, overrides)
    rows = file_rows(facts, ev.findings)
    if args.json:
        print_json(json_payload("ckpt", ev.findings, ev.not_evaluated, files=rows, coverage=coverage(facts, ev.findings),
                                groups=facts.get_known("ckpt.groups"), passed=ev.passed))  # fmt: skip
    else:
        _render(rows, ev, args.verbose, coverage_line(coverage(facts, ev.findings)))
    return int(exit_code(ev.findings))


def _render(rows: list[dict[str, Any]], ev: Any, verbose: bool, covered: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    from msdoctor.report.render import console, render_findings

    out = console()
    table = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("file", "rank", "tensors", "status"):
        table.add_column(col)
    for r in rows:
        n = str(r["params"]) if r["present"] in (None, r["params"]) else f"{r['params']} of {r['present']}"
        n = "-" if r["duplicate_of"] else n
        table.add_row(escape(r["path"]), "-" if r["rank"] is None else str(r["rank"]), n, escape(r["status"]))
    out.print(table)
    render_findings(ev.findings, ev.not_evaluated, out=out, verbose=verbose)
    out.print(f"[dim]coverage: {escape(covered)}[/]")
