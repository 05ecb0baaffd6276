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
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from msdoctor import rundir
from msdoctor.engine.catalogue import Rule
from msdoctor.engine.evaluate import run_checks
from msdoctor.engine.model import Finding, NotEvaluated, sort_findings
from msdoctor.facts.run import RunCollector
from msdoctor.rundir import FINDINGS_FILE, LOCK_FILE, STACK_SIGNAL, SUPERVISOR_FILE
from msdoctor.watch.diagnosis import HANG_RULE, live_rules

__all__ = ["FINDINGS_FILE", "HANG_RULE", "LOCK_FILE", "SuperviseOptions", "Supervisor", "all_done",
           "supervise"]
# evaluated at every poll: a hang, a death, an exception, the first NaN must be named within seconds;
# the rules that scan whole series (spikes, stragglers, memory slope…) run every ``series_every_s``


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
        self.rules = rules if rules is not None else live_rules()
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
        rules = self.rules if full else [r for r in self.rules if r.every_poll]
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
            if f.rank is None and any(k[0] == f.rule and k[1] is not None for k in self._announced):
                continue  # the rule named a rank before: that culprit stands (see the retraction below)
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
        # A round that names no rank never supersedes one that did: a culprit stays the culprit when
        # its peers later stop too (their own collective time-out, the kill) and nobody is behind
        fired = {k[0] for k in seen if k[1] is not None}
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
            rundir.write_replace(self.run_dir / SUPERVISOR_FILE, orjson.dumps(state, option=orjson.OPT_INDENT_2))
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
            rundir.append_bytes(self.run_dir / FINDINGS_FILE,
                                orjson.dumps(line, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        except OSError as exc:
            if self.write_error is None:
                self.write_error = f"cannot write {self.run_dir / FINDINGS_FILE}: {exc}"
                print(f"msdoctor supervisor: {self.write_error}", file=sys.stderr)

    def _run_hook(self, f: Finding) -> None:
        payload = orjson.dumps(f.to_dict(), option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)

        def run() -> None:
            err = _run_in_group(self.opts.on_finding or "", payload, self.opts.hook_timeout_s)
            if err is not None:
                msg = f"--on-finding hook failed for {f.rule} (rank {f.rank}): {err}"
                self.hook_errors.append(msg)
                print(f"msdoctor supervisor: {msg}", file=sys.stderr)

        th = threading.Thread(target=run, name="msdoctor-on-finding", daemon=True)
        th.start()
        self._hooks.append(th)


def _run_in_group(cmd: str, payload: bytes, timeout: float) -> str | None:
    """Run the user's hook in its own process group; past ``timeout`` the whole group is killed (a
    hook's children included). Returns why it failed, or None."""
    try:
        proc = subprocess.Popen(cmd, shell=True,  # the user's own command line, pipes and all
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)  # fmt: skip
    except OSError as exc:
        return str(exc)
    try:
        _, err = proc.communicate(payload, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.communicate(timeout=5)
        except (subprocess.TimeoutExpired, OSError, ValueError):
            pass
        return f"timed out after {timeout:g} s; killed its process group {proc.pid}"
    except OSError as exc:  # e.g. the hook closed stdin early (BrokenPipe)
        proc.wait()
        return None if proc.returncode == 0 else str(exc)
    if proc.returncode == 0:
        return None
    return f"exit {proc.returncode}: {err.decode(errors='replace').strip()[:200]}"


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
            _release_lock(Path(run_dir), lock)


def _take_lock(run_dir: Path) -> int | None:
    """One writer of findings.jsonl per run (an flock on RUN/.supervisor.pid, which the kernel drops
    when its holder dies, however it dies); None when another live supervisor holds the run."""
    import fcntl

    path = run_dir / LOCK_FILE
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                         0o644)  # fmt: skip
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise OSError(f"{path} is not a regular file")
        except OSError as exc:
            print(f"msdoctor supervisor: cannot lock {path}: {exc}", file=sys.stderr)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            _say_held(run_dir, _read_pid(path))
            return None
        try:  # the file we locked must still be the one at the path (a releasing holder unlinks it)
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        if not same:
            os.close(fd)
            continue
        pid = _read_pid(path)
        if pid > 0 and _pid_alive(pid) and not _is_zombie(pid):
            # a supervisor of an older msdoctor (pid file without flock) still runs
            os.close(fd)
            _say_held(run_dir, pid)
            return None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        return fd
    return None


def _release_lock(run_dir: Path, fd: int) -> None:
    try:
        (run_dir / LOCK_FILE).unlink(missing_ok=True)  # unlinked while held: a waiter re-checks the inode
    except OSError:
        pass
    os.close(fd)


def _say_held(run_dir: Path, pid: int) -> None:
    print(f"msdoctor supervisor: supervisor pid {pid} already writes {run_dir / FINDINGS_FILE}; "
          "following read-only", file=sys.stderr)


def _read_pid(path: Path) -> int:
    try:
        return int(path.read_text()[:20].strip() or "0")
    except (OSError, ValueError):
        return 0


def _is_zombie(pid: int) -> bool:
    try:
        import psutil

        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except Exception:  # no psutil / gone: not a live holder either way
        return False


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
        if proc is None and all_done(sup, world):
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


def all_done(sup: Supervisor, world: int) -> bool:
    """Every rank that should run has started and since ended or vanished."""
    ranks = sup.collector.ranks
    if not ranks or len(ranks) < world:
        return False
    info = sup.collector.last_ranks
    return all(r.get("ended") is not None or r.get("alive") is False for r in info.values())
