"""The job's logs, watched while it runs: every new line through the signature catalogue.

``msdoctor run`` does not need the job's cooperation for this: the workers' log directory (msrun
``--log_dir``, found on the command line, in a launch script, or msrun's default — the working
directory) and the job's console are tailed by byte offset (like :class:`msdoctor.watch.events.Tail`),
each complete line goes through :class:`msdoctor.engine.evaluate.SignatureSet`, and each signature rule
becomes one finding per rank (``worker_<r>.log`` → rank r) with a count and its first lines as evidence.
Every ``verdict_every_s`` (when a log grew) and at the end, the cross-rank correlation of
``msdoctor logs`` (rules 501–599) runs over the same files: who failed first, which errors are
consequences.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msdoctor.engine.evaluate import finding_from_hit, run_checks, signature_set
from msdoctor.engine.model import Evidence, Finding, Hit
from msdoctor.facts.layout import layout_named

_RANK_FILE = re.compile(r"(?:^|_)(\d+)\.log$")
_LOG_NAMES = re.compile(r"^(worker_\d+\.log|scheduler\.log|.*_\d+\.log)$")
_LOG_DIR_ARG = re.compile(r"--log_dir[= ]\s*(['\"]?)([^\s'\"]+)\1")
MAX_EVIDENCE = 5
MAX_LINE = 2000
LAYOUT_HEAD = 1 << 16  # a parallel layout is looked for in the first 64 KiB of each file and in the matched lines


def log_dirs(cmd: Sequence[str], cwd: Path, env: Mapping[str, str]) -> tuple[list[Path], list[str]]:
    """Where the job's workers write their logs, and how each was found (for run.json)."""
    dirs: list[Path] = []
    how: list[str] = []

    def add(p: str, why: str) -> None:
        path = (cwd / p).resolve() if not Path(p).is_absolute() else Path(p)
        if path not in dirs:
            dirs.append(path)
            how.append(f"{path} ({why})")

    for i, a in enumerate(cmd):
        if a.startswith("--log_dir="):
            add(a.split("=", 1)[1], "msrun --log_dir on the command line")
        elif a == "--log_dir" and i + 1 < len(cmd):
            add(cmd[i + 1], "msrun --log_dir on the command line")
    for a in cmd[:2]:
        if a.endswith(".sh") and (cwd / a).is_file():
            try:
                text = (cwd / a).read_text(errors="replace")
            except OSError:
                continue
            for m in _LOG_DIR_ARG.finditer(text):
                if "$" not in m.group(2):
                    add(m.group(2), f"--log_dir in {a}")
    if not dirs and any("msrun" in Path(a).name or "parallel.cluster.run" in a for a in cmd[:3]):
        add(".", "msrun's default: the working directory")
    if env.get("GLOG_log_dir"):
        add(env["GLOG_log_dir"], "GLOG_log_dir")
    return dirs, how


@dataclass
class _File:
    path: Path
    rank: int | None
    console: bool
    offset: int = 0
    lineno: int = 0
    partial: bytes = b""


@dataclass
class _Agg:
    rule: Any
    rank: int | None
    count: int = 0
    evidence: list[Evidence] = field(default_factory=list)
    first_t: float = 0.0


class LogTail:
    """Tails the log files of one job; :meth:`poll` returns every signature finding so far."""

    def __init__(self, dirs: Sequence[Path], console: Path | None, started: float, catalogue: Any = None,
                 console_rank: int | None = None) -> None:
        from msdoctor.engine.catalogue import load_catalogue

        self.dirs = list(dirs)
        self.console = console
        self.console_rank = console_rank  # a one-process job: its console is rank 0's log
        self.started = started
        self.catalogue = catalogue or load_catalogue()
        self.sigs = signature_set(self.catalogue)
        self.layout: str | None = None  # the first words naming a parallel layout (msdoctor/facts/layout.py)
        self.files: dict[Path, _File] = {}
        self.agg: dict[tuple[str, int | None], _Agg] = {}
        self.worker_texts: set[str] = set()
        self.lines = 0
        self.verdict: list[Finding] = []
        self._grew = False
        self._verdict_at = 0.0

    def _discover(self) -> None:
        for d in self.dirs:
            try:
                entries = list(d.iterdir())
            except OSError:
                continue
            for p in entries:
                if p in self.files or not _LOG_NAMES.match(p.name) or not p.is_file():
                    continue
                f = _File(p, _rank_of(p.name), console=False)
                try:
                    st = p.stat()
                    if st.st_mtime < self.started - 1 and p.name != "scheduler.log":
                        f.offset = st.st_size  # an older job's log in the same directory: only what is new
                except OSError:
                    continue
                self.files[p] = f
        if self.console is not None and self.console not in self.files and self.console.is_file():
            self.files[self.console] = _File(self.console, self.console_rank, console=True)

    def worker_logs(self) -> list[Path]:
        return [f.path for f in self.files.values() if not f.console]

    def poll(self) -> list[Finding]:
        self._discover()
        for f in sorted(self.files.values(), key=lambda f: f.console):  # worker files first: console echoes them
            self._read(f)
        return [*self.verdict, *(self._finding(a) for a in self.agg.values())]

    def _read(self, f: _File) -> None:
        try:
            with open(f.path, "rb") as fh:
                fh.seek(f.offset)
                data = fh.read(8 << 20)
        except OSError:
            return
        if not data:
            return
        if self.layout is None and f.offset < LAYOUT_HEAD:  # the head of each file, as `msdoctor logs` reads it
            self.layout = layout_named(data[: LAYOUT_HEAD - f.offset], [])
        f.offset += len(data)
        data = f.partial + data
        end = data.rfind(b"\n")
        if end < 0:
            f.partial = data[-MAX_LINE:]
            return
        f.partial = data[end + 1:][-MAX_LINE:]
        self._grew = True
        now = time.time()
        for raw in data[: end + 1].splitlines():
            f.lineno += 1
            self.lines += 1
            line = raw[:MAX_LINE].decode("utf-8", errors="replace")
            matches = self.sigs.match(line)
            if not matches:
                continue
            text = line.strip()
            if self.layout is None:
                self.layout = layout_named(raw, [])
            if f.console:
                if any(text in t or t in text for t in self.worker_texts if t):
                    continue  # msrun echoes the workers' logs on its console: counted in the worker's file
            else:
                self.worker_texts.add(text)
                if len(self.worker_texts) > 10000:
                    self.worker_texts.clear()
            for m in matches:
                rule = m.rule
                if rule.role == "progress" and rule.severity.value == "info":
                    continue
                a = self.agg.setdefault((rule.id, f.rank), _Agg(rule, f.rank, first_t=now))
                a.count += 1
                if len(a.evidence) < MAX_EVIDENCE:
                    a.evidence.append(Evidence(text=text[:500], file=str(f.path), line=f.lineno))

    def _finding(self, a: _Agg) -> Finding:
        where = f"rank {a.rank}'s log" if a.rank is not None else "the launcher's console or the scheduler's log"
        hit = Hit(message=f"{a.count} line(s) in {where} (live log tail)", evidence=tuple(a.evidence), rank=a.rank,
                  data={"t": a.first_t, "source": "log-tail"})
        f = finding_from_hit(self.catalogue.as_reported(a.rule, self.layout is not None), hit)  # no layout so far: a twin
        f.count = a.count
        return f

    def correlate(self, force: bool = False, every_s: float = 10.0) -> list[Finding]:
        """The cross-rank verdict of ``msdoctor logs`` over the files seen (when they grew)."""
        if not force and (not self._grew or time.monotonic() - self._verdict_at < every_s):
            return self.verdict
        self._grew = False
        self._verdict_at = time.monotonic()
        paths = [str(p) for p in self.worker_logs()] or ([str(self.console)] if self.console else [])
        if not paths:
            return self.verdict
        from msdoctor.errors import InputError
        from msdoctor.facts.logs import collect

        try:
            # a running job: no second reading of a quiet log (a bare status line is not a failed rank)
            facts, _ = collect(paths, self.catalogue, jobs=1, engine="python", reread_quiet=False)
        except (InputError, OSError):
            return self.verdict
        ev = run_checks(self.catalogue.select(source="log", kind="check"), facts)
        self.verdict = [f for f in ev.findings if f.data.get("root_cause")]
        for f in self.verdict:
            f.data.setdefault("source", "logs")
        return self.verdict


def _rank_of(name: str) -> int | None:
    if name == "scheduler.log":
        return None
    m = _RANK_FILE.search(name)
    return int(m.group(1)) if m else None


def quote(cmd: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in cmd)
