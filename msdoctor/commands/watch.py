"""`msdoctor watch RUN`: attach to a run directory and diagnose it — live with --follow, else one pass."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from msdoctor.errors import UsageError
from msdoctor.report.render import console, exit_code, json_payload, print_json, render_findings


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN", type=Path, help="run directory (with events/rank_<r>.jsonl)")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout (at the end)")
    p.add_argument("--follow", action="store_true", help="stay attached until every rank ended or --timeout")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="stop following after S seconds")
    p.add_argument("--poll", type=float, default=0.5, metavar="S", help="seconds between two polls (default 0.5)")
    p.add_argument("--stop-on-hang", action="store_true",
                   help="with --follow: stop the ranks once a hung rank is named and its stack dumped")
    p.add_argument("--on-finding", metavar="CMD", help="shell command run with each new finding as JSON on stdin")
    p.add_argument("-v", "--verbose", action="store_true", help="all evidence, full fix text")


def _carry_over(sup: Any) -> None:
    """Attaching to a run that was supervised before (e.g. a finished ``msdoctor train`` run): keep
    what that supervisor did, or rewriting RUN/supervisor.json would erase that it stopped the job
    (then its killed ranks read as vanished), the stacks it asked for and when it named the hang."""
    from msdoctor.facts.run import SUPERVISOR_FILE, load_supervisor_state

    if load_supervisor_state(sup.collector) is not None:
        return  # unreadable: the post-mortem reports it; nothing to carry
    try:
        prior = orjson.loads((sup.run_dir / SUPERVISOR_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return
    if isinstance(prior, dict):
        if isinstance(prior.get("hang_named_at"), (int, float)):
            sup.hang_named_at = float(prior["hang_named_at"])
        sup.actions[:0] = [a for a in prior.get("actions") or [] if isinstance(a, str)]


def run(args: argparse.Namespace) -> int:
    from msdoctor.watch.report import check_run_dir, render_extra, report_extra
    from msdoctor.watch.supervisor import SuperviseOptions, Supervisor, supervise

    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    if args.poll <= 0:
        raise UsageError(f"--poll must be positive, got {args.poll}")
    check_run_dir(args.run_dir)
    out = console()
    if args.follow:
        opts = SuperviseOptions(poll_s=args.poll, timeout_s=args.timeout, on_finding=args.on_finding,
                                stop_on_hang=args.stop_on_hang)
        if not args.json:
            opts.printer = lambda f: render_findings([f], out=out, verbose=args.verbose)
        sup = Supervisor(args.run_dir, opts, write=True)
        _carry_over(sup)
        sup.collector.poll()
        rc = supervise(args.run_dir, None, sup.collector.world or len(sup.collector.ranks), opts, sup=sup)
        findings, not_evaluated, skipped = sup.current(), sup.not_evaluated, []
        if rc == 124:
            skipped.append(f"stopped following after --timeout {args.timeout:g} s; ranks were still running")
        skipped += sup.hook_errors
    else:
        from msdoctor.watch.report import diagnose_dir

        sup, findings, not_evaluated, skipped = diagnose_dir(args.run_dir)
        if args.on_finding:
            sup.opts.on_finding = args.on_finding
            for f in findings:
                sup._run_hook(f)
            sup.flush()
            skipped += sup.hook_errors
    extra = report_extra(args.run_dir, sup, findings, skipped)
    for s in skipped:
        print(f"msdoctor watch: {s}", file=sys.stderr)
    if args.json:
        print_json(json_payload("watch", findings, not_evaluated, **extra))
    else:
        if args.follow:
            out.print("[bold]— run ended —[/]")
        render_findings(findings, not_evaluated, out=out, verbose=args.verbose)
        render_extra(out, {k: v for k, v in extra.items() if k != "skipped"})
    return int(exit_code(findings))
