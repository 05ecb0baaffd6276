"""The run directory: its layout, the event schema and encoding, the one reader of its files.

Bottom layer: no MindSpore, no msdoctor import. The watchdog inside each rank writes through it; the
supervisor, ``report``, ``watch``, the run facts and the TUI read through it, so the format lives
in one place.

Layout::

    RUN/events/rank_<r>.jsonl     one JSON event per line, appended by rank r's watchdog
    RUN/events/rank_<r>.stack.txt faulthandler dumps (SIGUSR1)
    RUN/events/rank_<r>.reserve   64 KiB the watchdog frees on a full disk to record that it is full
    RUN/findings.jsonl            the supervisor's findings as they arise (append-only: updates and
                                  retractions are new lines; :func:`fold_findings` gives the current set)
    RUN/supervisor.json           what the supervisor did (stack requests, stopping the job)
    RUN/report.json               the closing report
    RUN/run.json                  what ``msdoctor train`` launched
    RUN/msrun.log                 msrun's console: it names the worker that exited first
    RUN/.supervisor.pid           the lock of the one supervisor that writes findings.jsonl

Events: every event is one JSON object with at least ``t`` (unix seconds), ``rank`` and ``kind``:

==============  =====================================================================================
kind            fields
==============  =====================================================================================
``start``       world, pid, host, main_thread (hex id, as faulthandler prints it), heartbeat_s, argv,
                config (free-form dict)
``step``        step, loss, grad_norm, loss_scale, overflow, step_time, data_wait, phases {phase: s},
                rss, device_mem, … (any extra metric the loop passes)
``heartbeat``   step (last completed), phase, phase_step, where / where_user ("file:line func" of the
                main thread's innermost frame / innermost frame outside libraries), since, rss
``phase``       step, phase (e.g. "data", "forward", "collective", "save")
``checksum``    step, sums {parameter name: [sum, sum of squares]}
``exception``   step (in progress), phase, type, message, traceback, source (which hook saw it)
``watchdog_error``  where, error (the watchdog's own contained failure); disk_full: true when the
                disk under RUN filled up (written with the reserve freed; the watchdog then stops)
``end``         step, status ("ok" | "failed"), watchdog_errors
==============  =====================================================================================

Metric encoding: JSON has no NaN/Inf, so non-finite metrics are written as the strings "NaN",
"Infinity", "-Infinity" (:func:`encode_number`); :func:`number` decodes them.

Reading: only regular files are read. A FIFO, a device, a directory or a symlink loop where a file
should be is skipped with a reason (never opened for reading, so never blocks). Lines longer than
:data:`MAX_LINE` are skipped and counted; what an unreadable or cut line held is described (its kind
and step when they can still be read) so a report can say what was lost.
"""

from __future__ import annotations

import errno
import math
import os
import re
import signal
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

EVENTS_DIR = "events"
FINDINGS_FILE = "findings.jsonl"
SUPERVISOR_FILE = "supervisor.json"
REPORT_FILE = "report.json"
RUN_FILE = "run.json"
LAUNCHER_LOG = "msrun.log"  # msrun's own console (msdoctor train writes it)
LOCK_FILE = ".supervisor.pid"
STACK_SIGNAL = signal.SIGUSR1  # makes a rank's faulthandler append every thread's stack to its stack file

MAX_LINE = 1 << 20  # bytes: a longer line is skipped and counted (bounded memory)
MAX_READ = 64 << 20  # bytes read per call of Tail.read(); the rest comes at the next call
MAX_SMALL = 16 << 20  # bytes: cap for the small JSON files (supervisor.json, report.json)

_RANK_RE = re.compile(r"^rank_(\d+)\.jsonl$")
_KIND_RE = re.compile(rb'"kind"\s*:\s*"([a-z_]{1,32})"')
_STEP_RE = re.compile(rb'"step"\s*:\s*(\d{1,12})')


# -- paths ----------------------------------------------------------------------------------------
def events_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / EVENTS_DIR


def rank_file(run_dir: str | Path, rank: int) -> Path:
    return events_dir(run_dir) / f"rank_{rank}.jsonl"


def stack_file(run_dir: str | Path, rank: int) -> Path:
    return events_dir(run_dir) / f"rank_{rank}.stack.txt"


def reserve_file(run_dir: str | Path, rank: int) -> Path:
    """Space a rank's watchdog sets aside, freed to record that the disk is full (never read)."""
    return events_dir(run_dir) / f"rank_{rank}.reserve"


def findings_file(run_dir: str | Path) -> Path:
    return Path(run_dir) / FINDINGS_FILE


# -- encoding -------------------------------------------------------------------------------------
def encode_number(x: float) -> float | str:
    """A float as JSON can hold it: finite as is, NaN/Inf as "NaN" / "Infinity" / "-Infinity"."""
    if math.isfinite(x):
        return x
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def number(v: Any) -> float | None:
    """A metric value from an event as float (None if absent); inverse of :func:`encode_number`."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and len(v) <= 64:
        try:
            return float(v)  # 'NaN', 'Infinity', '-Infinity' parse
        except ValueError:
            return None
    return None


def dumps_event(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS) + b"\n"


def open_append(path: Path) -> int:
    """An fd to append to a regular file (created if absent). A FIFO, device, directory or symlink
    there is refused with OSError — never blocked on, never written through."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_NOFOLLOW
                 | getattr(os, "O_CLOEXEC", 0), 0o644)  # fmt: skip
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path}: not a regular file; not written")
    return fd


def append(path: Path, event: dict[str, Any]) -> None:
    """Append one event with a single write() so lines of concurrent writers never interleave."""
    append_bytes(path, dumps_event(event))


def append_bytes(path: Path, data: bytes) -> None:
    fd = open_append(path)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def write_replace(path: Path, data: bytes) -> None:
    """Write a whole file by a temporary file renamed over ``path`` (whatever ``path`` was: a symlink
    or FIFO there is replaced as a name, never written through or blocked on)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


# -- safe reading ---------------------------------------------------------------------------------
def not_regular(path: Path) -> str | None:
    """Why ``path`` must not be read as a file (None: a regular file, or absent — see :func:`exists`)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{path}: a symlink loop, not a file; skipped"
        return f"{path}: unreadable ({exc.strerror or exc}); skipped"
    if stat.S_ISREG(st.st_mode):
        return None
    what = ("a directory" if stat.S_ISDIR(st.st_mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(st.st_mode)
            else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")  # fmt: skip
    return f"{path}: {what}, not a file; skipped"


def _open_regular(path: Path) -> int:
    """An fd of a regular file, opened without blocking; OSError (with a reason) otherwise."""
    why = not_regular(path)
    if why:
        raise OSError(why)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between the stat and the open
        os.close(fd)
        raise OSError(f"{path}: not a regular file; skipped")
    return fd


def read_small(path: Path, limit: int = MAX_SMALL) -> bytes | None:
    """Whole content of a small regular file; None when absent; OSError with a reason otherwise."""
    try:
        fd = _open_regular(path)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise OSError(f"{path}: {size} bytes, over the {limit} byte limit; skipped")
        chunks, left = [], limit + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_tail(path: Path, limit: int = 1 << 20) -> bytes | None:
    """The last ``limit`` bytes of a regular file (None when absent); OSError with a reason otherwise."""
    try:
        fd = _open_regular(path)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - limit), os.SEEK_SET)
        return os.read(fd, limit)
    finally:
        os.close(fd)


def read_json_object(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None), (None, None) when absent, or (None, why it cannot be read)."""
    try:
        raw = read_small(path)
    except OSError as exc:
        return None, str(exc)
    if raw is None:
        return None, None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return None, f"{path}: unreadable ({exc})"
    if not isinstance(data, dict):
        return None, f"{path}: not a JSON object"
    return data, None


def _describe(raw: bytes) -> str:
    """What a cut or unreadable event line held, as far as it can still be read."""
    m = _KIND_RE.search(raw[:4096])
    s = _STEP_RE.search(raw[:4096])
    kind = m.group(1).decode() if m else None
    step = s.group(1).decode() if s else None
    if kind and step:
        return f"a {kind} event of step {step}"
    if kind:
        return f"a {kind} event"
    return "an event of unknown kind"


@dataclass
class Tail:
    """Reads the complete lines appended to one file since the last call (by byte offset).

    Only a regular file is read: anything else sets :attr:`problem` and yields nothing. A file that
    shrank (rewritten or truncated) is read again from its start, and that is noted in :attr:`lost`.
    """

    path: Path
    offset: int = 0
    skipped: int = 0  # lines that were not valid JSON objects (or over MAX_LINE)
    lost: list[str] = field(default_factory=list)  # what skipped lines held, e.g. "a step event of step 7"
    problem: str | None = None  # why the file is not read (not a regular file …)
    _drop_to_newline: bool = False

    def read(self) -> list[dict[str, Any]]:
        try:
            fd = _open_regular(self.path)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.problem = str(exc) if str(exc).startswith(str(self.path)) else f"{self.path}: {exc}"
            return []
        self.problem = None
        try:
            size = os.fstat(fd).st_size
            if size < self.offset:
                self.lost.append(f"the file shrank from {self.offset} to {size} bytes (truncated or rewritten); "
                                 "read again from its start")  # fmt: skip
                self.offset, self._drop_to_newline = 0, False
            os.lseek(fd, self.offset, os.SEEK_SET)
            data = os.read(fd, min(MAX_READ, max(size - self.offset, 0)))
        finally:
            os.close(fd)
        return self._lines(data)

    def _lines(self, data: bytes) -> list[dict[str, Any]]:
        end = data.rfind(b"\n")
        if end < 0:
            if len(data) > MAX_LINE:  # one endless line: skip it without keeping it in memory
                self.offset += len(data)
                if not self._drop_to_newline:
                    self._note(data)
                self._drop_to_newline = True
            return []
        self.offset += end + 1
        out = []
        for raw in data[: end + 1].split(b"\n"):
            if self._drop_to_newline:
                self._drop_to_newline = False
                continue  # the rest of an over-long line, already counted
            if not raw.strip():
                continue
            if len(raw) > MAX_LINE:
                self._note(raw)
                continue
            try:
                ev = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self._note(raw)
                continue
            if isinstance(ev, dict):
                out.append(ev)
            else:
                self._note(raw)
        return out

    def _note(self, raw: bytes) -> None:
        self.skipped += 1
        if len(self.lost) < 100:
            self.lost.append(f"unreadable line: {_describe(raw)}")

    def pending(self) -> tuple[int, str | None]:
        """Bytes after the last complete line (a cut last line) and what they held."""
        try:
            fd = _open_regular(self.path)
        except OSError:
            return 0, None
        try:
            size = os.fstat(fd).st_size
            rest = size - self.offset
            if rest <= 0:
                return 0, None
            os.lseek(fd, self.offset, os.SEEK_SET)
            head = os.read(fd, 4096)
        finally:
            os.close(fd)
        return rest, _describe(head)


def rank_files(run_dir: str | Path) -> dict[int, Path]:
    """Event files by rank (``events/rank_<r>.jsonl``), whatever they are (the Tail checks)."""
    out: dict[int, Path] = {}
    d = events_dir(run_dir)
    try:
        names = os.listdir(d) if d.is_dir() else []
    except OSError:
        return out
    for name in names:
        m = _RANK_RE.match(name)
        if m and len(m.group(1)) < 9:
            out[int(m.group(1))] = d / name
    return dict(sorted(out.items()))


def read_all(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every event of every rank (post-mortem)."""
    for _, path in rank_files(run_dir).items():
        tail = Tail(path)
        while True:
            before = tail.offset
            yield from tail.read()
            if tail.offset <= before:
                break


# -- findings.jsonl -------------------------------------------------------------------------------
FindingKey = tuple[str, Any]


@dataclass
class FindingsFold:
    """The current findings of ``findings.jsonl``: the latest line per rule × rank, retractions applied.

    Incremental: :meth:`poll` folds what was appended since the last call.
    """

    path: Path
    latest: dict[FindingKey, dict[str, Any]] = field(default_factory=dict)
    malformed: int = 0  # JSON objects that are not findings
    tail: Tail = field(init=False)

    def __post_init__(self) -> None:
        self.tail = Tail(self.path)

    def poll(self) -> bool:
        new = self.tail.read()
        for d in new:
            self.add(d)
        return bool(new)

    def add(self, d: dict[str, Any]) -> None:
        rank = d.get("rank")
        if not (rank is None or (isinstance(rank, int) and not isinstance(rank, bool))):
            self.malformed += 1
            return
        if d.get("retracted") is True:
            self.latest.pop((str(d.get("rule")), rank), None)
        elif isinstance(d.get("rule"), str) and d.get("severity") in ("error", "warning", "info"):
            self.latest[(d["rule"], rank)] = d
        else:
            self.malformed += 1

    @property
    def skipped(self) -> int:
        return self.tail.skipped + self.malformed

    @property
    def problem(self) -> str | None:
        return self.tail.problem


def fold_findings(run_dir: str | Path) -> FindingsFold:
    """One complete fold of ``RUN/findings.jsonl``."""
    fold = FindingsFold(findings_file(run_dir))
    while True:
        before = fold.tail.offset
        fold.poll()
        if fold.tail.offset <= before:
            return fold
