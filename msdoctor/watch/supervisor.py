"""The supervisor outside the ranks: waits on the launched job while diagnosing its event streams.

``supervise`` is what ``msdoctor train`` calls around msrun and ``msdoctor watch`` calls for a run
started elsewhere (``proc`` is None then). Every ``poll_s`` it tails the ranks' events
(:class:`msdoctor.facts.run.RunCollector`), evaluates the live rules (source "run") and writes each
finding to ``RUN/findings.jsonl`` as it arises — one finding per rule × rank, updated (at most every
``update_interval_s``) rather than repeated; at the end, the closing report goes to ``RUN/report.json``.
On a hung rank it sends SIGUSR1 so the rank's
faulthandler dumps its stack, and with ``stop_on_hang`` stops the job instead of waiting for the
framework's collective timeout. An ``on_finding`` hook gets each new finding as JSON on stdin; a
failing hook is reported on stderr and never stops supervision.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from msdoctor.engine.catalogue import Rule, load_catalogue
from msdoctor.engine.evaluate import run_checks
from msdoctor.engine.model import Finding, NotEvaluated, sort_findings
from msdoctor.facts.run import SUPERVISOR_FILE, RunCollector
from msdoctor.watch.watchdog import STACK_SIGNAL

FINDINGS_FILE = "findings.jsonl"
HANG_RULE = "COMM201"
# evaluated at every poll: a hang, a death, an exception, the first NaN must be named within seconds;
# the rules that scan whole series (spikes, stragglers, memory slope…) run every ``series_every_s``
EVERY_POLL = frozenset({"COMM201", "COMM202", "COMM203", "NUM201"})


@dataclass
class SuperviseOptions:
    poll_s: float = 0.5
    timeout_s: float | None = None  # kill the job after this long (None: wait for it)
    on_finding: str | None = None  # shell command fed each new finding as JSON on stdin
    stop_on_hang: bool = False  # stop the job once a hung rank is named and its stack dumped
    stack_wait_s: float = 3.0  # how long to wait for a requested stack dump before stopping anyway
    update_interval_s: float = 5.0  # rate limit for rewriting an updated finding
    series_every_s: float = 5.0  # the rules over whole step series run this often (the others every poll)
    hook_timeout_s: float = 30.0
    printer: Callable[[Finding], None] | None = None  # live output of new findings (msdoctor watch)
    # -- hook for `msdoctor run` (msdoctor/commands/run.py): called after the rules of every poll with
    # (supervisor, findings, running); returns the findings to use — it adds the live log tail's
    # findings and completes hang findings with the stacks dumped from outside (py-spy/pystack)
    extend: Callable[[Supervisor, list[Finding], bool | None], list[Finding]] | None = None


def _signature(f: Finding) -> tuple[Any, ...]:
    return (f.message, tuple(str(e) for e in f.evidence), f.step)


class Supervisor:
    """Incremental diagnosis of one run directory; :func:`supervise` drives it around a process."""

    def __init__(
        self, run_dir: str | Path, opts: SuperviseOptions | None = None, rules: list[Rule] | None = None, write: bool = True
    ) -> None:
        self.run_dir = Path(run_dir)
        self.opts = opts or SuperviseOptions()
        self.rules = rules if rules is not None else load_catalogue().select(source="run", kind="check")
        self.collector = RunCollector(self.run_dir)
        self.findings: dict[tuple[str, int | None], Finding] = {}
        self.not_evaluated: list[NotEvaluated] = []
        self.first_seen: dict[tuple[str, int | None], float] = {}
        self._written: dict[tuple[str, int | None], tuple[float, tuple[Any, ...]]] = {}
        self._updates: dict[tuple[str, int | None], int] = {}  # lines written per rule × rank
        self._announced: set[tuple[str, int | None]] = set()  # written / printed / hooked
        self.retracted: list[Finding] = []  # findings a later round of the same rule superseded
        self.write = write
        self.write_error: str | None = None
        self.hook_errors: list[str] = []
        self.actions: list[str] = []  # what the supervisor did (stack requests, stop), for the report
        self.hang_named_at: float | None = None
        self._series_at = -math.inf  # when the series rules last ran
        self._hooks: list[threading.Thread] = []

    # -- one round ------------------------------------------------------------------------------
    def poll(self, running: bool | None = None) -> list[Finding]:
        """Read new events, evaluate the rules; returns the findings that are new this round."""
        self.collector.poll()
        now = time.time() if running else None
        facts = self.collector.facts(now=now, running=running)
        full = not running or time.monotonic() - self._series_at >= self.opts.series_every_s
        rules = self.rules if full else [r for r in self.rules if r.id in EVERY_POLL]
        if full:
            self._series_at = time.monotonic()
        ev = run_checks(rules, facts)
        if full:
            self.not_evaluated = ev.not_evaluated
        found = ev.findings if self.opts.extend is None else self.opts.extend(self, ev.findings, running)  # msdoctor run
        new: list[Finding] = []
        t = time.time()
        seen: set[tuple[str, int | None]] = set()
        for f in found:
            key = (f.rule, f.rank)
            if key in seen:  # one finding per rule × rank per round
                continue
            seen.add(key)
            self.findings[key] = f
            if self._undecided(f):
                continue  # announced once the stacks that may name the culprit had their chance
            first = key not in self._announced
            if first:
                self._announced.add(key)
                self.first_seen[key] = t
                new.append(f)
            f.data.setdefault("first_seen", self.first_seen[key])
            self._record(key, f, t, force=first)
        # a rule that now names other ranks than before supersedes its older findings (e.g. the first
        # NaN rank, once the peers' events of that step are in): retract them
        fired = {k[0] for k in seen}
        for key in [k for k in self.findings if k[0] in fired and k not in seen]:
            old_f = self.findings.pop(key)
            if key in self._announced:
                self._announced.discard(key)
                self.retracted.append(old_f)
                self._write_line(dict(old_f.to_dict(), t=t, first_seen=self.first_seen.get(key, t), retracted=True))
        for f in new:
            if f.rule == HANG_RULE and self.hang_named_at is None:
                self.hang_named_at = t
            if self.opts.printer is not None:
                self.opts.printer(f)
            if self.opts.on_finding:
                self._run_hook(f)
        self._request_stacks()
        return new

    def current(self) -> list[Finding]:
        return sort_findings([f for k, f in self.findings.items() if k in self._announced])

    def _undecided(self, f: Finding) -> bool:
        """A hang that names no rank yet, while the stacks asked for could still break the tie."""
        if f.rule != HANG_RULE or f.rank is not None:
            return False
        asked = [
            self.collector.stack_requested.get(int(k))
            for k, r in self.collector.last_ranks.items()
            if r.get("local") and r.get("alive")
        ]
        if not asked:
            return False  # post-mortem or other hosts: no stack will come
        if any(a is None for a in asked):
            return True  # requested at the end of this poll
        return time.time() - max(a for a in asked if a is not None) < self.opts.stack_wait_s

    def flush(self) -> None:
        """Write every finding whose latest version has not been written yet, and what was done."""
        for key, f in self.findings.items():
            self._record(key, f, time.time(), force=False, ignore_rate=True)
        for th in self._hooks:
            th.join(timeout=self.opts.hook_timeout_s)
        if not self.write:
            return
        state = {
            "stopped_by_supervisor": self.collector.stopped_by_supervisor,
            "stack_requested": {str(k): v for k, v in self.collector.stack_requested.items()},
            "hang_named_at": self.hang_named_at,
            "actions": self.actions,
            "hook_errors": self.hook_errors,
        }
        try:
            (self.run_dir / SUPERVISOR_FILE).write_bytes(orjson.dumps(state, option=orjson.OPT_INDENT_2))
        except OSError as exc:
            print(f"msdoctor supervisor: cannot write {self.run_dir / SUPERVISOR_FILE}: {exc}", file=sys.stderr)

    # -- actions --------------------------------------------------------------------------------
    def _request_stacks(self) -> None:
        """SIGUSR1 to each hung rank named (or, when none stands out, to every stalled rank), once."""
        f_all = [f for k, f in self.findings.items() if k[0] == HANG_RULE]
        ranks = self.collector.last_ranks if f_all else {}
        for f in f_all:
            targets = [f.rank] if f.rank is not None else [int(k) for k in ranks]
            for r in targets:
                info = ranks.get(str(r)) or {}
                if r in self.collector.stack_requested or not info.get("local") or not info.get("alive"):
                    continue
                pid = info.get("pid")
                if not isinstance(pid, int):
                    continue
                try:
                    os.kill(pid, STACK_SIGNAL)
                    self.collector.stack_requested[r] = time.time()
                    self.actions.append(f"sent SIGUSR1 to rank {r} (pid {pid}) for a stack dump")
                except OSError as exc:
                    self.collector.stack_requested[r] = time.time()
                    self.actions.append(f"could not signal rank {r} (pid {pid}): {exc}")

    def hang_ready_to_stop(self) -> bool:
        """A hung rank is named and its stack is in (or did not come within ``stack_wait_s``)."""
        for (rule, rank), f in self.findings.items():
            if rule != HANG_RULE or rank is None:
                continue
            asked = self.collector.stack_requested.get(rank)
            if f.data.get("stack") or (asked is not None and time.time() - asked >= self.opts.stack_wait_s):
                return True
            if asked is None and not f.data.get("local"):
                return True  # another host: no stack to wait for
        return False

    def stop_job(self, proc: subprocess.Popen[bytes] | None) -> None:
        """Terminate the launcher and every local rank process (after a hang was named)."""
        self.collector.stopped_by_supervisor = True
        pids = [
            st.pid for st in self.collector.ranks.values() if st.pid and st.host == self.collector.hostname and st.ended is None
        ]
        self.actions.append(f"stopped the job (ranks {sorted(self.collector.ranks)}) after naming the hung rank")
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if proc is not None and proc.poll() is None:
                proc.send_signal(sig)
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    continue  # already gone
            deadline = time.monotonic() + 5.0
            while proc is not None and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            if proc is None or proc.poll() is not None:
                break

    # -- output ---------------------------------------------------------------------------------
    def _record(self, key: tuple[str, int | None], f: Finding, t: float, force: bool, ignore_rate: bool = False) -> None:
        sig = _signature(f)
        last = self._written.get(key)
        if last is not None and last[1] == sig:
            return
        if not force and last is not None and not ignore_rate and t - last[0] < self.opts.update_interval_s:
            return  # rate limit: the update is written at the next allowed time or by flush()
        n = self._updates.get(key, 0) + 1
        self._updates[key] = n
        self._written[key] = (t, sig)
        if not self.write:
            return
        self._write_line(dict(f.to_dict(), t=t, first_seen=self.first_seen.get(key, t), update=n))

    def _write_line(self, line: dict[str, Any]) -> None:
        if not self.write:
            return
        try:
            with open(self.run_dir / FINDINGS_FILE, "ab") as fh:
                fh.write(orjson.dumps(line, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        except OSError as exc:
            if self.write_error is None:
                self.write_error = f"cannot write {self.run_dir / FINDINGS_FILE}: {exc}"
                print(f"msdoctor supervisor: {self.write_error}", file=sys.stderr)

    def _run_hook(self, f: Finding) -> None:
        payload = orjson.dumps(f.to_dict(), option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)

        def run() -> None:
            try:
                res = subprocess.run(
                    self.opts.on_finding or "",
                    shell=True,  # the user's own command line, pipes and all
                    input=payload,
                    capture_output=True,
                    timeout=self.opts.hook_timeout_s,
                    check=False,
                )
                err = None if res.returncode == 0 else f"exit {res.returncode}: {res.stderr.decode(errors='replace').strip()[:200]}"
            except (OSError, subprocess.SubprocessError) as exc:
                err = str(exc)
            if err is not None:
                msg = f"--on-finding hook failed for {f.rule} (rank {f.rank}): {err}"
                self.hook_errors.append(msg)
                print(f"msdoctor supervisor: {msg}", file=sys.stderr)

        th = threading.Thread(target=run, name="msdoctor-on-finding", daemon=True)
        th.start()
        self._hooks.append(th)


def _status(code: int | None) -> int:
    if code is None:
        return 1
    return 128 - code if code < 0 else code  # killed by signal N → 128+N, as a shell reports it


def supervise(
    run_dir: Path, proc: subprocess.Popen[bytes] | None, world: int, opts: SuperviseOptions, sup: Supervisor | None = None
) -> int:
    """Watch the run until the job ends; returns its exit status (124 when ``timeout_s`` ran out).

    With ``proc`` None (a run started elsewhere) it follows until every rank that started has ended
    or vanished, or ``timeout_s``; it returns 0 then.
    """
    sup = sup or Supervisor(run_dir, opts)
    lock = _take_lock(Path(run_dir)) if sup.write else None
    if sup.write and lock is None:
        sup.write = False  # another live supervisor owns findings.jsonl: follow read-only
    try:
        return _supervise(sup, proc, world, opts)
    finally:
        if lock is not None:
            lock.unlink(missing_ok=True)


LOCK_FILE = ".supervisor.pid"


def _take_lock(run_dir: Path) -> Path | None:
    """One writer of findings.jsonl per run: None when a live supervisor already holds the run."""
    path = run_dir / LOCK_FILE
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                pid = int(path.read_text().strip() or "0")
            except (OSError, ValueError):
                pid = 0
            if pid > 0 and _pid_alive(pid):
                print(f"msdoctor supervisor: supervisor pid {pid} already writes {run_dir / FINDINGS_FILE}; "
                      "following read-only", file=sys.stderr)
                return None
            path.unlink(missing_ok=True)  # stale: its supervisor died
            continue
        except OSError as exc:
            print(f"msdoctor supervisor: cannot lock {path}: {exc}", file=sys.stderr)
            return None
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        return path
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _supervise(sup: Supervisor, proc: subprocess.Popen[bytes] | None, world: int, opts: SuperviseOptions) -> int:
    run_dir = sup.run_dir
    start = time.monotonic()
    code: int | None = None
    while True:
        running = proc.poll() is None if proc is not None else None
        sup.poll(running=bool(running) if proc is not None else None)
        if proc is not None and not running:
            code = proc.returncode
            break
        if proc is None and _all_done(sup, world):
            code = 0
            break
        if opts.stop_on_hang and sup.hang_ready_to_stop():
            sup.stop_job(proc)
            code = proc.returncode if proc is not None else 0
            break
        if opts.timeout_s is not None and time.monotonic() - start > opts.timeout_s:
            if proc is not None:
                proc.kill()
                proc.wait()
            code = 124
            break
        time.sleep(opts.poll_s)
    sup.poll(running=False)  # post-mortem pass: vanished ranks, final series
    sup.flush()
    if sup.write:
        from msdoctor.watch.report import write_closing_report  # imports this module: import late

        why = write_closing_report(Path(run_dir))
        if why:
            print(f"msdoctor supervisor: no closing report: {why}", file=sys.stderr)
    return code if code == 124 else _status(code)


def _all_done(sup: Supervisor, world: int) -> bool:
    ranks = sup.collector.ranks
    if not ranks or len(ranks) < world:
        return False
    info = sup.collector.last_ranks
    return all(r.get("ended") is not None or r.get("alive") is False for r in info.values())
