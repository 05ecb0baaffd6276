"""`msdoctor watch RUN`: attach to a run directory and diagnose it — live with --follow, else one pass."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from msdoctor.errors import InputError, UsageError
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
    from msdoctor import rundir
    from msdoctor.facts.run import load_supervisor_state

    if load_supervisor_state(sup.collector) is not None:
        return  # unreadable: the post-mortem reports it; nothing to carry
    prior, _ = rundir.read_json_object(sup.run_dir / rundir.SUPERVISOR_FILE)
    if prior is not None:
        if isinstance(prior.get("hang_named_at"), (int, float)):
            sup.hang_named_at = float(prior["hang_named_at"])
        sup.actions[:0] = [a for a in prior.get("actions") or [] if isinstance(a, str)]


def _wait_for_events(run_dir: Path, timeout: float | None, poll: float) -> bool:
    """--follow started before the ranks wrote anything: wait for their first event (or --timeout)."""
    from msdoctor import rundir
    from msdoctor.errors import InputError
    from msdoctor.watch.report import check_run_dir

    deadline = None if timeout is None else time.monotonic() + timeout
    said = False
    while True:
        try:
            check_run_dir(run_dir)
            return True
        except InputError as exc:
            if run_dir.exists() and not run_dir.is_dir():
                raise
            files = rundir.rank_files(run_dir)
            if files and all(rundir.not_regular(p) for p in files.values()):
                raise  # a FIFO or a directory where the events should be: waiting would not help
            if not said:
                print(f"msdoctor watch: waiting for the ranks' first events under {rundir.events_dir(run_dir)} "
                      f"({exc})", file=sys.stderr)  # fmt: skip
                said = True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(poll)


def run(args: argparse.Namespace) -> int:
    from msdoctor.watch.report import check_run_dir, diagnose_dir, render_extra
    from msdoctor.watch.supervisor import SuperviseOptions, Supervisor, all_done, supervise

    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    if args.poll <= 0:
        raise UsageError(f"--poll must be positive, got {args.poll}")
    out = console()
    notes: list[str] = []
    if args.follow:
        start = time.monotonic()
        if not _wait_for_events(args.run_dir, args.timeout, args.poll):
            raise InputError(f"{args.run_dir}: no rank wrote an event within --timeout {args.timeout:g} s")
        left = None if args.timeout is None else max(args.timeout - (time.monotonic() - start), args.poll)
        opts = SuperviseOptions(poll_s=args.poll, timeout_s=left, on_finding=args.on_finding,
                                stop_on_hang=args.stop_on_hang)
        if not args.json:
            opts.printer = lambda f: render_findings([f], out=out, verbose=args.verbose)
        sup = Supervisor(args.run_dir, opts, write=True)
        _carry_over(sup)
        sup.collector.poll()
        sup.collector.facts()  # liveness of each rank (run.ranks) for all_done
        world = sup.collector.world or len(sup.collector.ranks)
        if all_done(sup, world):
            sup.write = False  # a finished run: nothing to supervise, findings.jsonl stays as it is
        rc = supervise(args.run_dir, None, world, opts, sup=sup)
        if rc == 124:
            notes.append(f"stopped following after --timeout {args.timeout:g} s; ranks were still running")
        notes += sup.hook_errors
    else:
        check_run_dir(args.run_dir)
    diag = diagnose_dir(args.run_dir)  # the same verdict as `msdoctor report` and report.json
    if args.on_finding and not args.follow:
        sup = Supervisor(args.run_dir, SuperviseOptions(on_finding=args.on_finding), write=False)
        for f in diag.findings:
            sup._run_hook(f)
        sup.flush()
        notes += sup.hook_errors
    diag.skipped += notes
    extra = diag.extra(str(args.run_dir))
    for s in diag.skipped:
        print(f"msdoctor watch: {s}", file=sys.stderr)
    if args.json:
        print_json(json_payload("watch", diag.findings, diag.not_evaluated, **extra))
    else:
        if args.follow:
            out.print("[bold]— run ended —[/]")
        render_findings(diag.findings, diag.not_evaluated, out=out, verbose=args.verbose)
        render_extra(out, {k: v for k, v in extra.items() if k != "skipped"})
    return int(exit_code(diag.findings))
