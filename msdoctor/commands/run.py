"""`msdoctor run -- <command…>`: any launch command (msrun, a script that calls msrun, python) as the job,
diagnosed live with the same rules, files and exit codes as `msdoctor train` — with no change to the job.

* The ranks get the watchdog from a bootstrap on the job's PYTHONPATH
  (:mod:`msdoctor.watch.bootstrap`; ``--no-inject`` leaves the job's environment as it is).
* The workers' logs and the job's console are tailed through the signature catalogue
  (:mod:`msdoctor.watch.logtail`), so a job without the bootstrap still gets live findings.
* When a rank stalls, every local rank's Python and native stack is taken from outside with py-spy and
  pystack (:mod:`msdoctor.watch.stacks`); the hang finding names the rank that is not in a collective
  wait while the others are, with the native frames of both.
* The job runs in its own process group; Ctrl-C (or SIGTERM) stops it and every process it started.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from msdoctor.errors import ExitCode, InputError, UsageError

HANG_RULE = "COMM201"
CRASH_RULE = "COMM202"
STOP_GRACE_S = 10.0  # after Ctrl-C: SIGTERM, this long, then SIGKILL


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run-dir", help="where run.json, events/, findings.jsonl and report.json go "
                                     "(default ./msdoctor-runs/<time>)")
    p.add_argument("--stop-on-hang", action="store_true",
                   help="stop the job once a hung rank is named with its stacks, instead of waiting for the "
                        "framework's own collective timeout")
    p.add_argument("--on-finding", metavar="CMD", help="shell command fed each finding as JSON on stdin")
    p.add_argument("--tui", action="store_true",
                   help="watch the job in the terminal UI (msdoctor monitor); closing it leaves the job running")
    p.add_argument("--no-inject", action="store_true",
                   help="do not put the watchdog bootstrap on the job's PYTHONPATH (logs are still watched)")
    p.add_argument("--log-dir", action="append", default=[], metavar="DIR",
                   help="also watch the logs in DIR (default: msrun --log_dir from the command, or its default)")
    p.add_argument("--no-stacks", action="store_true", help="no py-spy/pystack dumps of a stalled rank")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="kill the job after S seconds")
    p.add_argument("-q", "--quiet", action="store_true", help="do not echo the job's console to stderr")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="all evidence, full fix text")
    p.add_argument("job", nargs=argparse.REMAINDER, metavar="-- COMMAND…", help="the launch command")


def _world(cmd: list[str]) -> int:
    for i, a in enumerate(cmd):
        v = a.split("=", 1)[1] if a.startswith("--worker_num=") else (cmd[i + 1] if a == "--worker_num" and i + 1 < len(cmd) else None)
        if v is not None and v.isdigit():
            return int(v)
    return 1


class Extras:
    """The supervisor's hook (``SuperviseOptions.extend``): live log findings and outside stacks."""

    def __init__(self, run_dir: Path, tail: Any, stacks: bool) -> None:
        self.run_dir = run_dir
        self.tail = tail
        self.stacks = stacks
        self.dumps: list[Any] = []
        self.dumped_at: float | None = None
        self.dump_s: float | None = None
        self.errors: list[str] = []
        self.notes: list[str] = []
        self.interrupted: list[str] = []  # signals the user sent (Ctrl-C), by name

    def __call__(self, sup: Any, findings: list[Any], running: bool | None) -> list[Any]:
        if self.interrupted and not sup.collector.stopped_by_supervisor:
            # the ranks Ctrl-C ended did not crash: the crash rule must not name them
            sup.collector.stopped_by_supervisor = True
            sup.actions.append(f"stopped the job on {self.interrupted[0]} from the user")
        out = list(findings)
        try:
            if self.stacks and running and self.dumped_at is None and any(f.rule == HANG_RULE for f in findings):
                self._dump(sup)
            if self.dumps:
                out = self._complete(out)
        except Exception as exc:  # the outside stacks must never stop supervision
            self._error(f"stacks: {type(exc).__name__}: {exc}")
        try:
            out = self._fatal(sup, out)
        except Exception as exc:
            self._error(f"fatal dumps: {type(exc).__name__}: {exc}")
        try:
            out.extend(self.tail.poll())
            out = [f for f in out if f.data.get("source") != "logs"] + self.tail.correlate(force=not running)
        except Exception as exc:
            self._error(f"log tail: {type(exc).__name__}: {exc}")
        return out

    def _fatal(self, sup: Any, findings: list[Any]) -> list[Any]:
        """A rank that vanished is told from the ones the launcher killed after it by the faulthandler dump
        the bootstrap enabled: "Fatal Python error: Segmentation fault" heads the dump of the rank that crashed.
        When both stopped at the same point of the same step, the events alone cannot order them."""
        import copy
        import re

        from msdoctor.engine.model import Evidence
        from msdoctor.watch import events

        vanished = [f for f in findings if f.rule == CRASH_RULE and f.rank is not None]
        if not vanished:
            return findings
        fatal: dict[int, tuple[str, str]] = {}
        for r in sup.collector.ranks:
            path = events.stack_file(self.run_dir, r)
            try:
                text = path.read_text(errors="replace") if path.is_file() else ""
            except OSError:
                continue
            m = re.search(r"^Fatal Python error: (.+)$", text, re.M)
            if m:
                rest = text[m.end():]
                cur = rest.find("Current thread")  # the thread that received the fatal signal
                block = (rest[cur:] if cur >= 0 else rest).split("\n\n", 1)[0]
                frames = re.findall(r'^  File "([^"]+)", line (\d+) in (\S+)', block, re.M)
                where = " <- ".join(f"{os.path.basename(fn)}:{ln} {fu}" for fn, ln, fu in frames[:4])
                fatal[r] = (m.group(1).strip(), where)
        if not fatal:
            return findings
        out = [f for f in findings if not (f.rule == CRASH_RULE and f.rank is not None and f.rank not in fatal)]
        named = {f.rank for f in out if f.rule == CRASH_RULE}
        for r, (what, where) in sorted(fatal.items()):
            if r not in named:
                info = sup.collector.last_ranks.get(str(r)) or {}
                g = copy.deepcopy(vanished[0])
                last = info.get("last_step")
                g.rank, g.step = r, (last + 1) if isinstance(last, int) else 0
                g.message = (f"rank {r} (pid {info.get('pid')}) died during step {g.step}: {what} "
                             "(the other ranks stopped after it: msrun tears the job down)")
                g.evidence = [Evidence(f"rank {r}: last event at phase {info.get('phase')!r}, last completed step {last}",
                                       fact="run.ranks")]
                g.data = {"t": info.get("last_seen_t"), "pid": info.get("pid")}
                out.append(g)
            for f in out:
                if f.rule == CRASH_RULE and f.rank == r:
                    f.evidence = [*f.evidence, Evidence(
                        f"faulthandler (rank {r}): Fatal Python error: {what}" + (f" at {where}" if where else ""),
                        file=str(events.stack_file(self.run_dir, r)))]
                    f.data["fatal"] = what
        return out

    def _error(self, msg: str) -> None:
        if msg not in self.errors:
            self.errors.append(msg)
            print(f"msdoctor run: {msg}", file=sys.stderr)

    def _dump(self, sup: Any) -> None:
        from msdoctor.watch import events, stacks

        self.dumped_at = time.time()
        targets = [(int(k), int(r["pid"])) for k, r in sup.collector.last_ranks.items()
                   if r.get("local") and r.get("alive") and isinstance(r.get("pid"), int)]
        if not targets:
            return
        t0 = time.monotonic()
        out_dir = events.events_dir(self.run_dir)
        with ThreadPoolExecutor(max_workers=min(8, len(targets))) as ex:
            self.dumps = list(ex.map(lambda rp: stacks.dump(rp[0], rp[1], out_dir), targets))
        self.dump_s = time.monotonic() - t0
        stacks.write(self.dumps, out_dir)
        denied = [d.rank for d in self.dumps if d.ptrace_denied]
        sup.actions.append(f"dumped the Python and native stacks of ranks {[d.rank for d in self.dumps]} with "
                           f"py-spy/pystack in {self.dump_s:.2f} s ({out_dir / 'outside_stacks.json'})")
        if denied:
            note = (f"ptrace denied for ranks {denied}: py-spy/pystack cannot attach (kernel.yama.ptrace_scope or "
                    "a container without CAP_SYS_PTRACE); falling back to the ranks' faulthandler dumps (SIGUSR1)")
            self.notes.append(note)
            sup.actions.append(note)
            print(f"msdoctor run: {note}", file=sys.stderr)

    def _complete(self, findings: list[Any]) -> list[Any]:
        """Hang findings with the outside stacks: the culprit by its stack, native frames as evidence."""
        import copy

        from msdoctor.engine.model import Evidence
        from msdoctor.watch import stacks

        by_rank = {d.rank: d for d in self.dumps}
        free = stacks.culprits(self.dumps)
        out: list[Any] = []
        for f in findings:
            if f.rule != HANG_RULE:
                out.append(f)
                continue
            if f.rank is None and free:
                # every rank stopped at the same point by its events: the stacks tell which one is not waiting
                for k in free:
                    g = copy.deepcopy(f)
                    g.rank = k
                    waiting = sorted(r for r in by_rank if r not in free)
                    main = by_rank[k].main()
                    g.message = (f"rank {k} hung at step {f.step}: its stack is not in a collective wait while ranks "
                                 f"{', '.join(map(str, waiting))} wait in one (stacks taken with py-spy/pystack)"
                                 + (f"; main thread at {main.frames[0] if main and main.frames else '?'}"))
                    g.data.update(culprit=k, waiting=waiting, by="outside stacks")
                    out.append(self._annotate(g, by_rank, Evidence))
                continue
            out.append(self._annotate(f, by_rank, Evidence))
            own = by_rank.get(f.rank) if f.rank is not None else None
            if own is not None and own.ok and own.collective_wait and not free:
                f.evidence = [*f.evidence, Evidence(
                    f"note: rank {f.rank}'s own stack waits in a collective too: it may be waiting for a peer "
                    "that already failed or for another host — read the other findings before fixing its code")]
            if f.rank is not None and free and f.rank not in free:
                f.evidence = [*f.evidence, Evidence(
                    f"note: the outside stacks show rank(s) {free} outside a collective wait while rank {f.rank} waits in one")]
        return out

    def _annotate(self, f: Any, by_rank: dict[int, Any], evidence_cls: Any) -> Any:
        from msdoctor.watch import stacks

        ev: list[Any] = []  # right after the stall line: the stacks are what a reader needs first
        native: dict[str, Any] = {}
        for r in sorted(by_rank, key=lambda r: (r != f.rank, r)):  # the culprit first
            d = by_rank[r]
            if not d.ok:
                ev.append(evidence_cls(f"rank {r} (pid {d.pid}): no outside stack — "
                                       + "; ".join(f"{k}: {v}" for k, v in d.tools.items())))
                continue
            main = d.main()
            wait = d.collective_wait
            role = "culprit" if r == f.rank else "peer"
            if main is not None:
                py = stacks.python_frames(main.frames)
                ev.append(evidence_cls(f"rank {r} ({role}) main thread (pystack/py-spy): Python {stacks.short(py, 4) or '-'}"
                                       f"; native {stacks.short(main.frames, 4)}", file=d.files[-1] if d.files else None))
            for t in d.user_threads()[:2] if r == f.rank else []:
                ev.append(evidence_cls(f"rank {r} thread {t.name or t.tid} in the job's code: "
                                       f"{stacks.short(stacks.python_frames(t.frames), 3)}; native {stacks.short(t.frames, 2)}"))
            if wait:
                ev.append(evidence_cls(f"rank {r} waits in a collective (native): {stacks.short(wait, 6)}"))
            elif main is not None:
                ev.append(evidence_cls(f"rank {r}: no thread in a collective wait"))
            native[str(r)] = {"main": main.frames[:40] if main else [], "collective_wait": wait[:40],
                              "tools": d.tools, "files": d.files}
        f.evidence = [*f.evidence[:1], *ev, *f.evidence[1:]]
        f.data["outside_stacks"] = native
        if any(d.ok for d in by_rank.values()):
            f.data["stack"] = True
        return f


class _Stopper:
    """Ctrl-C / SIGTERM: stop the job's process group and every process it started, then SIGKILL."""

    def __init__(self, proc: subprocess.Popen[bytes], tracker: Any) -> None:
        self.proc = proc
        self.tracker = tracker
        self.signals: list[int] = []
        self.on_signal: list[str] | None = None
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except (ValueError, OSError):  # not the main thread (tests calling run() in a thread)
                continue

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handle(self, signum: int, frame: Any) -> None:
        self.signals.append(signum)
        if self.on_signal is not None:
            self.on_signal.append(signal.Signals(signum).name)
        if len(self.signals) == 1:
            print(f"msdoctor run: {signal.Signals(signum).name}: stopping the job "
                  f"(again to kill it at once)", file=sys.stderr)
            threading.Thread(target=self._stop, args=(signal.SIGTERM, STOP_GRACE_S), daemon=True).start()
        else:
            threading.Thread(target=self._stop, args=(signal.SIGKILL, 0.0), daemon=True).start()

    def _stop(self, sig: int, grace: float) -> None:
        self._send(sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.1)
        if self.proc.poll() is None or sig != signal.SIGKILL:
            self._send(signal.SIGKILL)

    def _send(self, sig: int) -> None:
        import psutil

        pids = set(self.tracker.seen)
        try:
            pids.update(c.pid for c in psutil.Process(self.proc.pid).children(recursive=True))
        except psutil.Error:
            pass
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            pass
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                continue


def _run_dir(arg: str | None) -> Path:
    from msdoctor.commands.train import _run_dir as train_run_dir

    if arg and (Path(arg) / "run.json").exists():
        raise UsageError(f"{arg} already holds a run; choose another --run-dir")
    ns = argparse.Namespace(run_dir=arg, resume=False)
    run = train_run_dir(ns)
    for sub in ("ckpt", "logs"):  # train's layout; the job here writes its logs where it always does
        d = run / sub
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return run


def _echo(path: Path, stop: threading.Event) -> None:
    """The job's console, as it grows, to our stderr (the job writes to RUN/console.log)."""
    off = 0
    while True:
        done = stop.is_set()
        try:
            with open(path, "rb") as fh:
                fh.seek(off)
                data = fh.read()
        except OSError:
            data = b""
        if data:
            off += len(data)
            sys.stderr.buffer.write(data)
            sys.stderr.flush()
        if done:
            return
        stop.wait(0.2)


def run(args: argparse.Namespace) -> int:
    from msdoctor.commands.train import _ChildTracker, _summary, _write_json
    from msdoctor.watch.bootstrap import job_env
    from msdoctor.watch.logtail import LogTail, log_dirs
    from msdoctor.watch.supervisor import SuperviseOptions, supervise

    cmd = list(args.job)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UsageError("no command to run: msdoctor run [OPTIONS] -- COMMAND [ARGS…]")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    if args.tui and (args.json or not sys.stdout.isatty()):
        raise UsageError("--tui needs a terminal on stdout (and no --json); use `msdoctor monitor RUN` elsewhere")
    exe = shutil.which(cmd[0])
    if exe is None:
        raise InputError(f"{cmd[0]}: command not found")
    run_dir = _run_dir(args.run_dir)
    events_dir = run_dir / "events"
    events_dir.mkdir(parents=True, exist_ok=True)
    cwd = Path.cwd()
    env = job_env(os.environ, run_dir, inject=not args.no_inject)
    env.setdefault("PYTHONUNBUFFERED", "1")
    dirs, how = log_dirs(cmd, cwd, env)
    for d in args.log_dir:
        p = Path(d).resolve()
        if p not in dirs:
            dirs.append(p)
            how.append(f"{p} (--log-dir)")
    world = _world(cmd)
    console = run_dir / "console.log"
    meta: dict[str, Any] = {
        "argv": sys.argv, "command": cmd, "cwd": str(cwd), "world_size": world, "inject": not args.no_inject,
        "log_dirs": how, "console": str(console), "started": time.time(), "status": "running",
    }
    _write_json(run_dir / "run.json", meta)
    if not args.json:
        print(f"msdoctor run: {' '.join(cmd)}\n  run dir {run_dir}; watching {', '.join(how) or 'the console only'}"
              + ("" if not args.no_inject else "; no bootstrap (--no-inject)"), file=sys.stderr)

    launcher = any("msrun" in Path(a).name or "parallel.cluster.run" in a or a.endswith(".sh") for a in cmd[:3])
    tail = LogTail(dirs, console, started=time.time(), console_rank=0 if world == 1 and not launcher else None)
    extras = Extras(run_dir, tail, stacks=not args.no_stacks)
    printer = None if args.json else _printer
    opts = SuperviseOptions(timeout_s=args.timeout, on_finding=args.on_finding, stop_on_hang=args.stop_on_hang,
                            printer=printer, extend=extras)
    echo_stop = threading.Event()
    with open(console, "wb") as console_fh:
        try:
            proc = subprocess.Popen(cmd, stdout=console_fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, cwd=cwd, start_new_session=True)
        except OSError as exc:
            raise InputError(f"{cmd[0]}: cannot start: {exc}") from None
        echo = threading.Thread(target=_echo, args=(console, echo_stop), daemon=True)
        if not args.quiet and not args.json and not args.tui:  # the TUI owns the terminal; console.log keeps it
            echo.start()
        tracker = _ChildTracker(proc.pid)
        stopper = _Stopper(proc, tracker)
        stopper.on_signal = extras.interrupted
        stopper.install()
        started = time.monotonic()
        try:
            try:
                if args.tui:  # the supervisor in a thread, the monitor here; closing it leaves the job running
                    from msdoctor.tui.launch import run_with_tui

                    rc = run_with_tui(run_dir, lambda: supervise(run_dir, proc, world, opts))
                else:
                    rc = supervise(run_dir, proc, world, opts)
            except Exception as exc:  # live diagnosis failing must not take the job down with it
                meta["supervisor_error"] = f"{type(exc).__name__}: {exc}"
                print(f"msdoctor run: live diagnosis stopped ({meta['supervisor_error']}); waiting for the job",
                      file=sys.stderr)
                from msdoctor.commands.train import _wait

                rc = _wait(proc, args.timeout, started)
        finally:
            if proc.poll() is None:
                if _pg_alive(proc.pid):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.kill()
                proc.wait()
            leftovers = tracker.kill_leftovers()
            stopper.restore()
            echo_stop.set()
            if echo.is_alive():
                echo.join(timeout=2)
    interrupted = bool(stopper.signals)
    meta.update(ended=time.time(), exit_status=rc, killed_leftovers=leftovers, interrupted=interrupted,
                status="ok" if rc == 0 else ("timeout" if rc == 124 else ("interrupted" if interrupted else "failed")),
                outside_stacks={"dumped_at": extras.dumped_at, "seconds": extras.dump_s,
                                "notes": extras.notes} if extras.dumped_at else None,
                hook_errors=extras.errors, log_lines_read=tail.lines)
    meta["duration_s"] = round(meta["ended"] - meta["started"], 3)
    _write_json(run_dir / "run.json", meta)

    report = _closing_report(run_dir, tail, inject=not args.no_inject)
    findings = report["_findings"]
    ranks = _summary(run_dir, world) if any(events_dir.glob("rank_*.jsonl")) else {}
    if not args.no_inject and not ranks:
        report["skipped"].append("no rank started the bootstrap's watchdog (is msdoctor importable by the job's "
                                 "Python? a launcher whose ranks are not recognised?): live rules saw no events")
    from msdoctor.report.render import exit_code, json_payload, print_json, render_findings

    failed = rc != 0
    code = max(int(exit_code(findings)), int(ExitCode.FINDINGS) if failed else int(ExitCode.OK))
    if args.json:
        print_json(json_payload("run", findings, [], run_dir=str(run_dir), exit_status=rc, status=meta["status"],
                                ranks=ranks, duration_s=meta["duration_s"], root_cause=report.get("root_cause"),
                                timeline=report.get("timeline"), skipped=report["skipped"], log_dirs=how))
        return code
    for r, info in ranks.items():
        extra = f"  {info['exception']}" if info.get("exception") else ""
        print(f"rank {r}: {info['steps']} steps, {info.get('status') or 'no end event'}{extra}")
    if findings:
        render_findings(findings, [], verbose=args.verbose)
    rc_info = report.get("root_cause")
    if rc_info:
        where = f"rank {rc_info['rank']}" if rc_info.get("rank") is not None else "all ranks"
        step = f" at step {rc_info['step']}" if rc_info.get("step") is not None else ""
        print(f"root cause: {rc_info['rule']} on {where}{step}: {rc_info['message']}")
    for s in report["skipped"]:
        print(f"skipped: {s}", file=sys.stderr)
    print(f"job {meta['status']} (exit {rc}) after {meta['duration_s']:.1f} s; run dir {run_dir}")
    return code


def _pg_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    return True


def _printer(f: Any) -> None:
    where = f"rank {f.rank}" if f.rank is not None else "all ranks"
    step = f", step {f.step}" if f.step is not None else ""
    print(f"msdoctor run: {f.severity.value} {f.rule} ({where}{step}): {f.message}", file=sys.stderr)


def _closing_report(run_dir: Path, tail: Any, inject: bool) -> dict[str, Any]:
    """``RUN/report.json``: the supervisor's closing report plus what only this command saw.

    The closing report re-evaluates the live rules over the events; the findings of the log tail and
    the hang finding completed with outside stacks exist only in ``findings.jsonl``: they are merged
    in (the completed hang finding replaces the plain one). Without events (``--no-inject``, or no
    rank started) the report is made from ``findings.jsonl`` alone.
    """
    from msdoctor.engine.model import Finding, sort_findings
    from msdoctor.errors import InputError as InErr
    from msdoctor.watch.report import REPORT_FILE, closing_report, live_findings, root_cause, timeline

    skipped: list[str] = []
    try:
        payload = closing_report(run_dir)
        base = [Finding.from_dict(d) for d in payload["findings"]]
    except InErr as exc:
        payload = {"command": "report", "findings": [], "not_evaluated": [], "ranks": [], "skipped": []}
        skipped.append(f"{exc}: findings from the logs only" if not inject else str(exc))
        base = []
    merged = {(f.rule, f.rank): f for f in base}
    for f in live_findings(run_dir):
        key = (f.rule, f.rank)
        if key not in merged or f.data.get("outside_stacks") or f.data.get("fatal") or f.data.get("source") in ("log-tail", "logs"):
            merged[key] = f
    if merged.get((HANG_RULE, None)) is not None and any(k[0] == HANG_RULE and k[1] is not None for k in merged):
        merged.pop((HANG_RULE, None))  # the outside stacks named the rank the events could not
    crashed = {k[1] for k, f in merged.items() if k[0] == CRASH_RULE and f.data.get("fatal")}
    if crashed:  # the faulthandler dump decided which rank crashed; the post-mortem pass does not read it
        for key in [k for k in merged if k[0] == CRASH_RULE and k[1] not in crashed]:
            merged.pop(key)
    findings = sort_findings(list(merged.values()))
    payload.update(command="run", findings=[f.to_dict() for f in findings], timeline=timeline(findings),
                   root_cause=root_cause(findings).to_dict(), skipped=[*payload.get("skipped", []), *skipped],
                   log_lines_read=tail.lines)
    try:
        (run_dir / REPORT_FILE).write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    except OSError as exc:
        payload["skipped"].append(f"cannot write {run_dir / REPORT_FILE}: {exc}")
    payload["_findings"] = findings
    return payload
