"""Stream one log file and keep only what the correlation needs: signature hits, anomalies, progress.

The meaning of a line (grammar, signatures, progress, the per-file state) is :mod:`msdoctor.facts.logstate`,
shared with the grep engine (:mod:`msdoctor.facts.loggrep`), which depends on that module only.
Memory stays flat in the file size: the file is read in blocks of bytes, one combined bytes regex (the
literal anchors of every signature plus the generic error markers) finds candidate lines, and only those
lines are decoded and parsed. Per file the result is a small JSON-able dict (:func:`scan_file`);
:func:`scan_files` runs files in parallel processes sized to the cores.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import IO, Any

from msdoctor.facts.logformats import (
    file_kind,
    parse_ts,
    split_banner,
)
from msdoctor.facts.logstate import (  # noqa: F401 — re-exported: the engines' public names
    BARE_ERROR_RE,
    CLUSTER_UP,
    GENERIC_MARKERS,
    HEAD,
    KEEP_FIRST,
    KEEP_RECENT,
    MAX_TEXT,
    TS_BYTES_RE,
    WRAP_MAX,
    BannerLookup,
    ScanSpec,
    TsLookup,
    _decode,
    _FileState,
    _handle,
    _mostly_binary,
    _summary,
    dewrap,
    frames_before,
    from_web_copy,
    has_web_copy,
    read_open_raise,
    resolve_progress,
    ts_before,
    wrap_width,
    wrap_widths,
)

BLOCK = 1 << 20  # bytes per read
MAX_LINE = 1 << 20  # bytes of one line that are scanned; the rest of a longer line is counted and dropped
MAX_DECOMPRESSED = 1 << 30  # bytes read from one compressed file; beyond it the file is reported cut


def _ts_before(block: bytes, pos: int) -> tuple[float | None, str | None]:
    return ts_before(lambda a, b: block[a:b], pos)


def _frames_before(block: bytes, pos: int) -> list[str]:
    return frames_before(lambda a, b: block[a:b], pos)


def _next_line(block: bytes, end: int) -> str:
    """The line after the one ending at ``end`` (for messages wrapped over two lines)."""
    stop = block.find(b"\n", end + 1, end + 4097)
    return block[end + 1 : stop if stop >= 0 else end + 4097].decode("utf-8", "replace")


def _next_is_rule(block: bytes, end: int) -> bool:
    return block[end + 1 : end + 3] == b"--"


def _banner_after(block: bytes, end: int) -> dict[str, str]:
    """The MindSpore exception banner that follows an exception line (up to the next log record)."""
    tail = block[end : end + 8192]
    stop = re.search(rb"\n\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]", tail)
    if stop:
        tail = tail[: stop.start()]
    return split_banner(tail.decode("utf-8", "replace"))


def _open(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb", buffering=0)


class ReadLimits:
    """What the bounded reader cut: over-long lines and compressed input beyond its cap (issue 16)."""

    __slots__ = ("long_lines", "cut_bytes", "read_bytes", "capped", "open_line")

    def __init__(self) -> None:
        self.long_lines = 0  # lines longer than MAX_LINE: only their first MAX_LINE bytes are scanned
        self.cut_bytes = 0  # bytes of those lines not scanned
        self.read_bytes = 0  # (decompressed) bytes read
        self.capped = False  # stopped at the decompressed-size cap
        self.open_line = False  # the file ended inside an over-long line (no newline at its end)

    def skipped(self, path: str, lineno: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.long_lines:
            out.append({"file": path, "reason": f"{self.long_lines} line(s) longer than {MAX_LINE >> 20} MiB: only "
                        f"their first {MAX_LINE >> 20} MiB scanned ({self.cut_bytes} bytes cut)"})  # fmt: skip
        if self.capped:
            out.append({"file": path, "line": lineno, "reason": f"decompressed size passed the cap of "
                        f"{MAX_DECOMPRESSED >> 20} MiB: the rest of the compressed file not read (a gzip bomb?)"})  # fmt: skip
        return out


def _blocks(fh: IO[bytes], limits: ReadLimits | None = None, cap: int | None = None) -> Iterator[tuple[bytes, bool]]:
    """Whole lines, one block at a time; the final partial line is flagged (file truncated mid-line).

    Memory is bounded whatever the input: a line longer than ``MAX_LINE`` is handed on as its first
    ``MAX_LINE`` bytes (a line of its own) and the rest, up to its newline, is counted in ``limits`` and
    dropped; with ``cap`` (compressed input) reading stops after ``cap`` bytes. Each byte is copied a bounded
    number of times, so a 300 MiB line costs what 300 MiB of short lines cost.
    """
    lim = limits if limits is not None else ReadLimits()
    carry = b""
    skipping = False  # inside an over-long line, dropping bytes up to its newline
    while True:
        if cap is not None and lim.read_bytes >= cap:
            lim.capped = True
            if carry:
                yield carry, True
            return
        chunk = fh.read(BLOCK)
        if not chunk:
            if carry:
                yield carry, True
            lim.open_line = skipping
            return
        lim.read_bytes += len(chunk)
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                lim.cut_bytes += len(chunk)
                continue
            lim.cut_bytes += nl
            skipping = False
            chunk = chunk[nl + 1 :]
            if not chunk:
                continue
        buf = carry + chunk if carry else chunk
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE:
                lim.long_lines += 1
                lim.cut_bytes += len(buf) - MAX_LINE
                yield buf[:MAX_LINE] + b"\n", False
                carry, skipping = b"", True
            else:
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
    limits = ReadLimits()
    if spec.engine != "python" and size >= spec.grep_min_size and not path.endswith(".gz"):
        from msdoctor.facts.loggrep import scan_batch

        fh.close()
        return scan_batch([path], spec, scan_file)[0]
    try:
        with fh:
            for block, cut in _blocks(fh, limits, MAX_DECOMPRESSED if path.endswith(".gz") else None):
                if not head:
                    head = block[:HEAD]
                    sample = head[:65536]
                    if _mostly_binary(sample):
                        out["skipped"].append({"file": path, "reason": "binary content (not a text log)"})
                        out["readable"] = False
                        out["size"] = size
                        return out
                    if size <= WRAP_MAX:
                        st.wrap_width, weak = wrap_widths(head[:65536])
                        if weak:
                            out["wrap_weak"] = True  # collect() may read it again with the longest lines re-joined
                            if spec.weak_wrap:
                                st.wrap_width = weak
                truncated = truncated or cut
                lineno = _scan_block(st, spec, block, lineno)
                if cut:
                    lineno += 1
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        out["skipped"].append({"file": path, "reason": f"read stopped at line {lineno} ({exc})"})
    read_open_raise(st, spec)
    resolve_progress(st)
    out.update(_summary(st, head, size, lineno))
    if st.wrap_width:
        out["wrap_width"] = st.wrap_width
    if (truncated and not limits.capped) or limits.open_line:
        out["skipped"].append({"file": path, "line": lineno, "reason": "last line has no newline (file truncated?)"})
    out["skipped"].extend(limits.skipped(path, lineno))
    if st.binary_lines:
        out["skipped"].append({"file": path, "reason": f"{st.binary_lines} line(s) with binary content skipped"})
    if st.non_utf8:
        out["skipped"].append({"file": path, "reason": f"{st.non_utf8} line(s) not UTF-8 (read as GB18030 or with replacement)"})
    return out


def _scan_block(st: _FileState, spec: ScanSpec, block: bytes, lineno: int) -> int:
    """Process the candidate lines of one block; returns the line count after the block."""
    rx = spec.prefilter
    if has_web_copy(block):
        block = from_web_copy(block)
    if st.wrap_width:
        block = dewrap(block, st.wrap_width)
    pos = 0
    counted = 0  # newlines counted up to this offset
    n = len(block)
    has_nul = b"\x00" in block
    while pos < n:
        m = rx.search(block, pos)
        if m is None:
            break
        s = block.rfind(b"\n", 0, m.start()) + 1
        e = block.find(b"\n", m.start())
        if e < 0:
            e = n
        if e < m.end() and rx.search(block, s, e) is None:
            # The match runs over a line end: a pattern that opens with whitespace (ENV249's `(?:^|\s)FAILED
            # tests/…`) took the newline in front of its own line. The candidate is a line that matches on its
            # own, as for grep, never two lines read as one at the first one's number.
            pos = e + 1
            continue
        lineno += block.count(b"\n", counted, s)
        counted = s
        raw = block[s:e]
        if not (has_nul and b"\x00" in raw):
            _handle(st, spec, _decode(raw, st), lineno + 1, partial(_ts_before, block, s),
                    partial(_banner_after, block, e), partial(_next_is_rule, block, e),
                    partial(_next_line, block, e), partial(_frames_before, block, s))  # fmt: skip
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


# -- many files --------------------------------------------------------------------------------

_SPEC: ScanSpec | None = None
BATCH_BYTES = 32 << 20  # one grep process per batch of files of about this size (or BATCH_FILES files)
BATCH_FILES = 256


def _init_worker(spec: ScanSpec) -> None:
    global _SPEC
    _SPEC = spec


def _scan_batch(paths: list[str]) -> list[dict[str, Any]]:
    assert _SPEC is not None
    return _run_batch(paths, _SPEC)


def _run_batch(paths: list[str], spec: ScanSpec) -> list[dict[str, Any]]:
    # grep compiles the whole catalogue's ~1200 patterns before it reads a byte: the scan of a pasted excerpt
    # takes ~0.3 s with grep, ~0.01 s with Python (bench/RESULTS.md, "msdoctor logs on one paste"). It pays
    # back on big inputs only, so a batch smaller than grep_min_size in all is read by the Python engine (the
    # same verdicts; the engines are held equal by tests/logs).
    if spec.engine == "python" or sum(_size(p) for p in paths) < spec.grep_min_size:
        return [scan_file(p, spec) for p in paths]
    from msdoctor.facts.loggrep import scan_batch

    return scan_batch(paths, spec, scan_file)


def _batches(files: list[str]) -> list[list[str]]:
    """Large files alone and first (so one big file does not finish last), small files grouped."""
    out: list[list[str]] = []
    cur: list[str] = []
    acc = 0
    for p in sorted(files, key=lambda f: -_size(f)):
        size = _size(p)
        if cur and (acc + size > BATCH_BYTES or len(cur) >= BATCH_FILES):
            out.append(cur)
            cur, acc = [], 0
        cur.append(p)
        acc += size
    if cur:
        out.append(cur)
    return out


def scan_files(paths: Iterable[str], spec: ScanSpec, jobs: int | None = None) -> list[dict[str, Any]]:
    """Scan files in batches, in parallel processes sized to the cores; small inputs stay in-process."""
    files = list(paths)
    total = sum(_size(p) for p in files)
    cores = jobs or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
    batches = _batches(files)
    workers = max(1, min(cores, len(batches)))
    if workers == 1 or total < (8 << 20):  # process start-up costs more than it saves below ~8 MB
        results = [r for b in batches for r in _run_batch(b, spec)]
    else:
        import multiprocessing

        ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(spec,)) as ex:
            results = [r for rs in ex.map(_scan_batch, batches) for r in rs]
    by_path = {r["path"]: r for r in results}
    return [by_path[p] for p in files]


def _size(p: str) -> int:
    try:
        return os.path.getsize(p)
    except OSError:
        return 0
