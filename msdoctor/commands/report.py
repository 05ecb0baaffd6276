"""`msdoctor report RUN`: the closing report of a run — findings, first anomaly per rank, root cause."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from msdoctor.report.render import console, exit_code, json_payload, print_json, render_findings


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN", type=Path, help="run directory (with events/rank_<r>.jsonl)")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="all evidence, full fix text")


def run(args: argparse.Namespace) -> int:
    from msdoctor.watch.report import diagnose_dir, render_extra

    diag = diagnose_dir(args.run_dir)
    extra = diag.extra(str(args.run_dir))
    for s in diag.skipped:
        print(f"msdoctor report: skipped: {s}", file=sys.stderr)
    if args.json:
        print_json(json_payload("report", diag.findings, diag.not_evaluated, **extra))
    else:
        out = console()
        render_findings(diag.findings, diag.not_evaluated, out=out, verbose=args.verbose)
        render_extra(out, extra)
    return int(exit_code(diag.findings))
