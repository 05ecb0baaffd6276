"""Stream one log file and keep only what the correlation needs: signature hits, anomalies, progress.

Memory stays flat in the file size: the file is read in blocks of bytes, one combined bytes regex (the
literal anchors of every signature plus the generic error markers) finds candidate lines, and only those
lines are decoded and parsed. Per file the result is a small JSON-able dict (:func:`scan_file`);
:func:`scan_files` runs files in parallel processes sized to the cores.
"""

from __future__ import annotations

import gzip
import os
import re
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any

from msdoctor.engine.evaluate import SignatureSet
from msdoctor.facts.logformats import (
    MSRUN_WORKER_RE,
    SCHED_NODE_RE,
    file_kind,
    parse_line,
    parse_ts,
    rank_from_path,
    rank_hints,
    split_banner,
    world_size_hint,
)

BLOCK = 1 << 20  # bytes per read; a line longer than this is still handled (the block grows)
HEAD = 1 << 20  # rank / world-size hints are read from the first MiB only
MAX_TEXT = 400  # evidence text is cut to this many characters
KEEP_FIRST = 40  # anomalies kept from the start of a file …
KEEP_RECENT = 120  # … and since the last progress line (a flood keeps its first and last lines)
GENERIC_MARKERS = (
    rb"\[ERROR\]", rb"\[CRITICAL\]", rb"\[EXCEPTION\]", rb"Traceback \(most recent call last\)",
    rb"(?:Error|Exception): ", rb"(?:Error|Exception):$",
)  # fmt: skip
BARE_ERROR_RE = re.compile(r"^\[(?:ERROR|CRITICAL|EXCEPTION)\]")  # a broken or foreign line that still says ERROR
TS_BYTES_RE = re.compile(rb"\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}\.\d{3}\.\d{3}")
CLUSTER_UP = "Cluster is successfully initialized"  # logged by every rank at the same moment (clock anchor)


@dataclass
class ScanSpec:
    """What to look for: the signature set and the combined byte-level pre-filter built from it."""

    sigs: SignatureSet
    prefilter: re.Pattern[bytes] = field(init=False)

    def __post_init__(self) -> None:
        parts: list[bytes] = list(GENERIC_MARKERS) + [re.escape(CLUSTER_UP.encode())]
        for _rule, rx, anchor in self.sigs.entries:
            if anchor:
                parts.append(re.escape(anchor.encode("utf-8")))
            else:  # no literal to anchor on: the whole pattern joins the pre-filter
                parts.append(_bytes_pattern(rx.pattern))
        # Longest first so a long anchor is not shadowed by its own prefix; duplicates removed.
        uniq = sorted(set(parts), key=len, reverse=True)
        self.prefilter = re.compile(b"|".join(uniq), re.M)


def _bytes_pattern(pattern: str) -> bytes:
    """A str signature as an equivalent-enough bytes alternative (named groups dropped, flags scoped)."""
    p = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    m = re.match(r"^\(\?([aiLmsux]+)\)", p)
    if m:  # global flags are only legal at the very start of the combined regex: scope them
        p = f"(?{m.group(1).replace('u', '')}:{p[m.end():]})"
    return p.encode("utf-8")


def _event(rule: str | None, role: str, severity: str, lineno: int, text: str, ts: float | None,
           ts_text: str | None, groups: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
    ev: dict[str, Any] = {"rule": rule, "role": role, "severity": severity, "line": lineno,
                          "text": text[:MAX_TEXT], "time": ts, "ts": ts_text}  # fmt: skip
    if groups:
        ev["groups"] = groups
    ev.update(extra)
    return ev


class _FileState:
    """Accumulates one file's findings while its blocks stream by."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.hits: dict[str, dict[str, Any]] = {}  # rule id → {count, first, last}
        self.first_events: list[dict[str, Any]] = []
        self.recent: deque[dict[str, Any]] = deque(maxlen=KEEP_RECENT)
        self.recent_first: list[dict[str, Any]] = []  # first anomalies after the last progress line
        self.anomalies = 0
        self.progress_first: dict[str, Any] | None = None
        self.progress_last: dict[str, Any] | None = None
        self.progress_count = 0
        self.last_traceback: int | None = None
        self.exceptions: deque[dict[str, Any]] = deque(maxlen=3)
        self.pids: dict[int, int] = {}
        self.cluster_up: float | None = None
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.last_ts_text: str | None = None
        self.non_utf8 = 0
        self.binary_lines = 0
        self.lines = 0

    def add_anomaly(self, ev: dict[str, Any]) -> None:
        self.anomalies += 1
        if len(self.first_events) < KEEP_FIRST:
            self.first_events.append(ev)
        if len(self.recent_first) < KEEP_FIRST:
            self.recent_first.append(ev)
        else:
            self.recent.append(ev)


def _decode(raw: bytes, st: _FileState) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        st.non_utf8 += 1
        try:  # Chinese consoles write GB18030; a mixed file decodes line by line
            return raw.decode("gb18030")
        except UnicodeDecodeError:
            return raw.decode("utf-8", "replace")


def _ts_before(block: bytes, pos: int) -> tuple[float | None, str | None]:
    """The nearest time stamp at or before ``pos`` in this block (lines without their own stamp)."""
    start = max(0, pos - 65536)
    last = None
    for last in TS_BYTES_RE.finditer(block, start, pos):  # noqa: B007 — only the last one is wanted
        pass
    if last is None:
        return None, None
    text = last.group(0).decode("ascii")
    return parse_ts(text), text


def _banner_after(block: bytes, end: int) -> dict[str, str]:
    """The MindSpore exception banner that follows an exception line (up to the next log record)."""
    tail = block[end : end + 8192]
    stop = re.search(rb"\n\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]", tail)
    if stop:
        tail = tail[: stop.start()]
    return split_banner(tail.decode("utf-8", "replace"))


def _handle(st: _FileState, spec: ScanSpec, text: str, lineno: int, block: bytes, s: int, e: int) -> None:
    rec = parse_line(text)
    ts, ts_text = rec.time, rec.ts_text
    if rec.pid is not None:
        st.pids[rec.pid] = st.pids.get(rec.pid, 0) + 1
    if ts is None:
        ts, ts_text = _ts_before(block, s)
    if CLUSTER_UP in text and st.cluster_up is None:
        st.cluster_up = ts
    matches = spec.sigs.match(text)
    classified = False
    for m in matches:
        rule = m.rule
        if rule.role == "progress":
            step = int(m.groups["step"]) if m.groups.get("step", "").isdigit() else None
            ev = _event(rule.id, "progress", rule.severity.value, lineno, text.strip(), ts, ts_text, m.groups, step=step)
            st.progress_count += 0 if st.progress_last is not None and st.progress_last["line"] == lineno else 1
            if st.progress_first is None:
                st.progress_first = ev
            st.progress_last = ev
            st.recent.clear()
            st.recent_first = []
            if rule.severity.value == "info":
                continue  # plain progress; a progress rule with a severity (e.g. overflow) is also a hit
            ev = dict(ev, pid=rec.pid)
        else:
            ev = _event(rule.id, rule.role, rule.severity.value, lineno, text.strip(), ts, ts_text, m.groups, pid=rec.pid)
        h = st.hits.get(rule.id)
        if h is None:
            h = st.hits[rule.id] = {"count": 1, "first": ev, "last": ev, "pids": {}}
        else:
            h["count"] += 1
            h["last"] = ev
        pid = str(rec.pid if rec.pid is not None else -1)  # a console echoes its workers' lines: count by writer
        if pid in h["pids"] or len(h["pids"]) < 64:
            h["pids"][pid] = h["pids"].get(pid, 0) + 1
        if rule.severity.value != "info" and rule.role in ("root", "consequence"):
            classified = True
            st.add_anomaly(ev)
    if rec.grammar == "traceback":
        st.last_traceback = lineno
        return
    if rec.grammar == "python-exc":
        banner = _banner_after(block, e) if not rec.message.strip() or block[e + 1 : e + 3] == b"--" else {}
        exc = {"type": rec.exc_type, "message": rec.message.strip()[:MAX_TEXT], "line": lineno,
               "after_traceback": st.last_traceback is not None and lineno - st.last_traceback < 400,
               "sections": {k: v[:MAX_TEXT] for k, v in banner.items()}}  # fmt: skip
        st.exceptions.append(exc)
        if not classified:
            body = rec.message.strip() or next((v for k, v in banner.items() if "Stack" not in k), "")
            st.add_anomaly(_event(None, "unclassified", "error", lineno, f"{rec.exc_type}: {body}".strip(),
                                  ts, ts_text, exc_type=rec.exc_type or ""))  # fmt: skip
        return
    if not classified and (rec.level in ("ERROR", "CRITICAL", "EXCEPTION") or BARE_ERROR_RE.match(text)):
        st.add_anomaly(_event(None, "unclassified", "error", lineno, text.strip(), ts, ts_text))


def _open(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb", buffering=0)


def _blocks(fh: IO[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Whole lines, one block at a time; the final partial line is flagged (file truncated mid-line)."""
    carry = b""
    while True:
        chunk = fh.read(BLOCK)
        if not chunk:
            if carry:
                yield carry, True
            return
        buf = carry + chunk if carry else chunk
        cut = buf.rfind(b"\n")
        if cut < 0:
            carry = buf
            continue
        carry = buf[cut + 1 :]
        yield buf[: cut + 1], False


def scan_file(path: str, spec: ScanSpec) -> dict[str, Any]:
    """Scan one file. Never raises for unreadable content: the reason goes to ``skipped``."""
    st = _FileState(path)
    out: dict[str, Any] = {"path": path, "kind": file_kind(path), "skipped": []}
    try:
        size = os.path.getsize(path)
        fh = _open(path)
    except OSError as exc:
        out["skipped"].append({"file": path, "reason": f"cannot be read ({exc.strerror or exc})"})
        out["readable"] = False
        return out
    head = b""
    truncated = False
    lineno = 0
    try:
        with fh:
            for block, partial in _blocks(fh):
                if not head:
                    head = block[:HEAD]
                    sample = head[:65536]
                    if _mostly_binary(sample):
                        out["skipped"].append({"file": path, "reason": "binary content (not a text log)"})
                        out["readable"] = False
                        out["size"] = size
                        return out
                truncated = truncated or partial
                lineno = _scan_block(st, spec, block, lineno)
                if partial:
                    lineno += 1
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        out["skipped"].append({"file": path, "reason": f"read stopped at line {lineno} ({exc})"})
    out.update(_summary(st, head, size, lineno))
    if truncated:
        out["skipped"].append({"file": path, "line": lineno, "reason": "last line has no newline (file truncated?)"})
    if st.binary_lines:
        out["skipped"].append({"file": path, "reason": f"{st.binary_lines} line(s) with binary content skipped"})
    if st.non_utf8:
        out["skipped"].append({"file": path, "reason": f"{st.non_utf8} line(s) not UTF-8 (read as GB18030 or with replacement)"})
    return out


def _mostly_binary(sample: bytes) -> bool:
    if not sample:
        return False
    ctrl = sum(sample.count(bytes([c])) for c in (*range(0, 9), 11, 12, *range(14, 27), *range(28, 32)))
    return ctrl > len(sample) // 20


def _scan_block(st: _FileState, spec: ScanSpec, block: bytes, lineno: int) -> int:
    """Process the candidate lines of one block; returns the line count after the block."""
    rx = spec.prefilter
    pos = 0
    counted = 0  # newlines counted up to this offset
    n = len(block)
    has_nul = b"\x00" in block
    while pos < n:
        m = rx.search(block, pos)
        if m is None:
            break
        s = block.rfind(b"\n", 0, m.start()) + 1
        e = block.find(b"\n", m.end())
        if e < 0:
            e = n
        lineno += block.count(b"\n", counted, s)
        counted = s
        raw = block[s:e]
        if not (has_nul and b"\x00" in raw):
            _handle(st, spec, _decode(raw, st), lineno + 1, block, s, e)
        pos = e + 1
    lineno += block.count(b"\n", counted)
    if has_nul:  # rare: zero-filled tails, garbage pasted into a log; count the lines it spoils
        st.binary_lines += sum(1 for ln in block.split(b"\n") if b"\x00" in ln)
    # the last time stamp of the block tells when the rank was last alive
    tail_ts, tail_text = _ts_before(block, n)
    if tail_ts is not None:
        st.last_ts, st.last_ts_text = tail_ts, tail_text
        if st.first_ts is None:
            m0 = TS_BYTES_RE.search(block)
            st.first_ts = parse_ts(m0.group(0).decode("ascii")) if m0 else tail_ts
    return lineno


def _summary(st: _FileState, head: bytes, size: int, lines: int) -> dict[str, Any]:
    hints = {k: sorted(v) for k, v in rank_hints(head).items()}
    prank, psource = rank_from_path(st.path)
    msrun_map = {os.path.basename(p.decode("utf-8", "replace")): int(r) for r, p in MSRUN_WORKER_RE.findall(head)}
    sched_nodes = {int(n): int(r) for n, r in SCHED_NODE_RE.findall(head)}
    recent = list(st.recent_first) + [e for e in st.recent if e not in st.recent_first]
    return {
        "readable": True,
        "size": size,
        "lines": lines,
        "path_rank": prank,
        "path_rank_source": psource,
        "rank_hints": hints,
        "msrun_workers": msrun_map,
        "scheduler_nodes": sched_nodes,
        "world_size": world_size_hint(head),
        "pids": sorted(st.pids, key=lambda p: -st.pids[p])[:8],
        "hits": st.hits,
        "anomalies": st.anomalies,
        "first_events": st.first_events,
        "since_progress": recent,
        "progress": {"count": st.progress_count, "first": st.progress_first, "last": st.progress_last},
        "last_traceback": st.last_traceback,
        "exceptions": list(st.exceptions),
        "cluster_up": st.cluster_up,
        "first_time": st.first_ts,
        "last_time": st.last_ts,
        "last_ts": st.last_ts_text,
    }


# -- many files --------------------------------------------------------------------------------

_SPEC: ScanSpec | None = None


def _init_worker(spec: ScanSpec) -> None:
    global _SPEC
    _SPEC = spec


def _scan_one(path: str) -> dict[str, Any]:
    assert _SPEC is not None
    return scan_file(path, _SPEC)


def scan_files(paths: Iterable[str], spec: ScanSpec, jobs: int | None = None) -> list[dict[str, Any]]:
    """Scan files in parallel processes (one per core, at most one per file); small inputs stay in-process."""
    files = list(paths)
    total = 0
    for p in files:
        try:
            total += os.path.getsize(p)
        except OSError:
            pass
    cores = jobs or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
    workers = max(1, min(cores, len(files)))
    if workers == 1 or total < (8 << 20):  # process start-up costs more than it saves below ~8 MB
        return [scan_file(p, spec) for p in files]
    import multiprocessing

    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(spec,)) as ex:
        # Large files first so one big file does not finish last alone.
        order = sorted(range(len(files)), key=lambda i: -_size(files[i]))
        results = dict(zip(order, ex.map(_scan_one, [files[i] for i in order], chunksize=max(1, len(files) // (workers * 8))), strict=True))
    return [results[i] for i in range(len(files))]


def _size(p: str) -> int:
    try:
        return os.path.getsize(p)
    except OSError:
        return 0
