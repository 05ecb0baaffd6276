"""GNU grep as the line pre-filter for big log files.

Python's ``re`` runs an alternation of ~170 anchors at 3–6 MB/s; grep's DFA/Aho–Corasick pre-filter reads
the same files at hundreds of MB/s (bench/RESULTS.md). For files above ``ScanSpec.grep_min_size`` the
scanner streams ``grep -a -n -b -E`` over the file with the same anchors (translated to ERE) and handles
only the lines grep prints, exactly as the Python engine does; what the handling needs from other lines
(the time stamp before a progress line, the banner after an exception, the file's last time stamp) is read
with ``os.pread`` at the byte offsets grep reports. Without grep, or when a pattern does not translate,
the Python engine is used.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
from collections.abc import Callable
from functools import cache, partial
from typing import Any

from msdoctor.facts.logformats import (
    file_kind,
    parse_ts,
    split_banner,  # noqa: I001
)
from msdoctor.facts.logstate import (
    GENERIC_MARKER_PATTERNS,
    HEAD,
    TS_BYTES_RE,
    WRAP_MAX,
    ScanSpec,
    _decode,
    _FileState,
    _handle,
    _mostly_binary,
    _summary,
    frames_before,
    has_web_copy,
    read_open_raise,
    resolve_progress,
    ts_before,
    wrap_width,
)

GREP_MAX_AS = 128 << 20  # grep's address space: a line it cannot hold makes it fail ("memory exhausted")
MAX_OUT_LINE = 1 << 20  # bytes of one printed line that are read; the rest is dropped (as the Python engine)

ERE_SPECIAL = re.compile(r"([.\[\]()*+?{}|^$\\])")


def ere_literal(text: str) -> str:
    return ERE_SPECIAL.sub(r"\\\1", text)


CONTROL = {r"\r": "\r", r"\t": "\t", r"\n": ""}  # ERE has no escapes for them: the bytes themselves


# A long bounded repetition (`[^()]{0,400}`, `.{1,300}`) becomes `*` / `+` in the translation: grep builds one DFA of
# all its patterns, and a few unanchored signatures with such repetitions together made its states explode (round 60:
# 25 of 2134 patterns took 79 s on the 750 KB of the fixture lines, each alone 0.1 s). The unbounded form matches more
# lines, never fewer, and the Python regex still decides.
BIG_REPEAT_RE = re.compile(r"\{(\d+),(\d+)\}")
BIG_REPEAT_MIN = 17  # `{0,16}` and shorter stay as written


def _class_end(p: str, start: int) -> int:
    """The index of the `]` closing the class that opens at ``start``, or -1."""
    i = start + 1
    if i < len(p) and p[i] == "^":
        i += 1
    if i < len(p) and p[i] == "]":
        i += 1
    while i < len(p):
        if p[i] == "\\":
            i += 2
            continue
        if p[i] == "]":
            return i
        i += 1
    return -1


def to_ere(pattern: str) -> str | None:
    """Translate a (simple) Python regex to POSIX ERE, or None when it uses what ERE lacks.

    Only ever used for the few signatures without a literal anchor; a translation may match more than
    the original (lookaheads and lookbehinds are dropped) but never less — the Python regex still decides afterwards.
    """
    p = pattern
    ci = False
    m = re.match(r"^\(\?([aiLmsux]+)\)", p)
    if m:
        ci = "i" in m.group(1)
        p = p[m.end() :]
    # a group's own flags (`(?i:graph mode|…)`): ERE cannot scope them, so case-blind for the whole pattern (more)
    ci = ci or bool(re.search(r"\(\?[aiLmsux]*i[aiLmsux]*(?:-[imsx]+)?:", p))
    p = re.sub(r"\(\?[aiLmsux]*(?:-[imsx]+)?:", "(?:", p)
    # grep reads bytes (LC_ALL=C): a counted repetition counts bytes where the pattern counts characters, so where the
    # pattern holds other than ASCII every bounded repetition is read as unbounded (more, never fewer)
    wide = not p.isascii()
    p = re.sub(r"\(\?<?[=!](?:[^()\\]|\\.)*\)", "", p)  # lookarounds without groups: drop (broader, still correct)
    if re.search(r"\(\?<[=!]|\(\?P=|\\[1-9]|\\[AZ]", p):  # a lookbehind with a group inside, a back-reference
        return None
    p = re.sub(r"\(\?P<\w+>", "(", p).replace("(?:", "(")
    p = re.sub(r"([*+?}])\?", r"\1", p)  # lazy → greedy
    subs = {r"\d": "[0-9]", r"\D": "[^0-9]", r"\s": "[[:space:]]", r"\S": "[^[:space:]]", r"\w": "[[:alnum:]_]", r"\W": "[^[:alnum:]_]"}
    out, i, in_class = [], 0, False
    while i < len(p):
        two = p[i : i + 2]
        if two in subs and not in_class:
            out.append(subs[two])
            i += 2
            continue
        if two in subs and in_class:  # inside [...]: POSIX class names without their own brackets
            out.append(subs[two][1:-1] if not subs[two].startswith("[^") else "")
            i += 2
            continue
        if two in CONTROL:  # grep reads lines without their newline: `[^x\n]` is `[^x]`; `\n` alone never matches
            if two == r"\n" and not in_class:
                return None
            out.append(CONTROL[two])
            i += 2
            continue
        ch = p[i]
        if ch == "\\" and i + 1 < len(p):
            nxt = p[i + 1]
            out.append(("\\" + nxt) if (nxt in ".[]()*+?{}|^$\\b" and not in_class) else (nxt if in_class else "\\" + nxt))
            i += 2
            continue
        rep = BIG_REPEAT_RE.match(p, i) if ch == "{" and not in_class else None
        if rep and (int(rep.group(2)) >= BIG_REPEAT_MIN or wide):  # `{0,300}` → `*`, `{1,300}` → `+`: BIG_REPEAT_RE
            out.append("*" if rep.group(1) == "0" else "+")
            i = rep.end()
            continue
        if ch == "[" and not in_class and wide:
            end = _class_end(p, i)
            body = p[i + 1 : end]
            if end > 0 and not body.isascii():
                kept = "".join(c for c in body if c.isascii())
                if body.startswith("^"):  # a negated class: without its other characters (it then excludes less)
                    out.append(to_ere(f"[{kept}]") or "." if kept != "^" else ".")
                else:  # one character of the class: one to four bytes of UTF-8
                    out.append("(.|..|...|....)")
                i = end + 1
                continue
        if not ch.isascii() and not in_class and i + 1 < len(p) and p[i + 1] in "?*+{":
            out.append(f"({ch})")  # `值?`: the quantifier is the character's, not its last byte's
            i += 1
            continue
        if p.startswith("[^\\n]", i) and not in_class:  # "any character but a newline": every character of a line
            out.append(".")
            i += 5
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        elif ci and ch.isascii() and ch.isalpha() and not in_class:
            out.append(f"[{ch.lower()}{ch.upper()}]")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _generic_ere() -> tuple[str, ...]:
    out = tuple(to_ere(p) for p in GENERIC_MARKER_PATTERNS)
    bad = [p for p, e in zip(GENERIC_MARKER_PATTERNS, out, strict=True) if e is None]
    if bad:  # a marker written outside what both engines read alike (logstate.GENERIC_MARKER_PATTERNS)
        raise ValueError(f"generic marker(s) without an ERE translation: {bad}")
    return tuple(e for e in out if e is not None)


# The generic markers as grep reads them: the same table as the Python engine's GENERIC_MARKERS.
GENERIC_ERE = _generic_ere()


@cache
def grep_args(patterns: tuple[str, ...]) -> tuple[str, ...] | None:
    """The grep command line for a pattern set, or None when grep is missing or refuses a pattern."""
    exe = shutil.which("grep")
    if exe is None:
        return None
    args = [exe, "-a", "-n", "-b", "-E"]
    for p in patterns:
        args += ["-e", p]
    try:
        probe = subprocess.run([*args, "--", os.devnull], capture_output=True, env={"LC_ALL": "C"}, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return tuple(args) if probe.returncode == 1 else None  # 1: ran fine, no match in /dev/null


def patterns_for(spec: ScanSpec) -> tuple[str, ...] | None:
    pats: set[str] = set(GENERIC_ERE)
    for _rule, sg, anchors in spec.sigs.entries:
        if anchors:
            pats.update(ere_literal(a) for a in anchors)
            continue
        ere = to_ere(sg.pattern)
        if ere is None:
            return None
        pats.add(ere)
    return tuple(sorted(pats))


def _ts_before(fd: int, off: int) -> tuple[float | None, str | None]:
    return ts_before(lambda a, b: os.pread(fd, b - a, a), off)


def _frames(fd: int, off: int) -> list[str]:
    return frames_before(lambda a, b: os.pread(fd, b - a, a), off)


def _banner(fd: int, end: int) -> dict[str, str]:
    tail = os.pread(fd, 8192, end + 1)
    stop = re.search(rb"\n\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]", tail)
    return split_banner((tail[: stop.start()] if stop else tail).decode("utf-8", "replace"))


def _next_line(fd: int, end: int) -> str:
    tail = os.pread(fd, 4096, end + 1)
    return tail.split(b"\n", 1)[0].decode("utf-8", "replace")


def _next_is_rule(fd: int, end: int) -> bool:
    return os.pread(fd, 2, end + 1) == b"--"


class _Open:
    """One file of a batch while grep's lines for it stream by."""

    def __init__(self, path: str, fd: int, size: int, head: bytes) -> None:
        self.path, self.fd, self.size, self.head = path, fd, size, head
        self.st = _FileState(path)
        self.out: dict[str, Any] = {"path": path, "kind": file_kind(path), "skipped": []}
        self.last_line = 0


def usable(spec: ScanSpec) -> tuple[str, ...] | None:
    pats = patterns_for(spec)
    return grep_args(pats) if pats else None


def scan_batch(paths: list[str], spec: ScanSpec, scan_file: Callable[[str, ScanSpec], dict[str, Any]]) -> list[dict[str, Any]]:
    """Scan several files with one grep process (its start-up and pattern compile cost ~0.3 s for the
    ~1200 patterns of the catalogue: logscan hands grep only batches of at least ``grep_min_size``).

    ``scan_file`` is the Python engine, for what grep cannot read (no grep, ``.gz``); passed in by
    :mod:`logscan` so that this module depends on the state machine only, not on the other engine.
    """
    args = usable(spec)
    if args is None:
        return [scan_file(p, ScanSpec(spec.sigs, engine="python")) for p in paths]
    results: dict[str, dict[str, Any]] = {}
    live: dict[bytes, _Open] = {}
    for path in paths:
        if path.endswith(".gz"):
            results[path] = scan_file(path, ScanSpec(spec.sigs, engine="python"))
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
            size = os.fstat(fd).st_size
        except OSError as exc:
            results[path] = {"path": path, "kind": file_kind(path), "readable": False,
                             "skipped": [{"file": path, "reason": f"cannot be read ({exc.strerror or exc})"}]}  # fmt: skip
            continue
        head = os.pread(fd, HEAD, 0)
        if _mostly_binary(head[:65536]):
            os.close(fd)
            results[path] = {"path": path, "kind": file_kind(path), "readable": False, "size": size,
                             "skipped": [{"file": path, "reason": "binary content (not a text log)"}]}  # fmt: skip
            continue
        if has_web_copy(head) or (size <= WRAP_MAX and wrap_width(head[:65536])):  # a web copy or a hard-wrapped paste: grep's
            # anchors expect the log's own spaces and whole lines; the Python engine reads it as the log had it
            os.close(fd)
            results[path] = scan_file(path, ScanSpec(spec.sigs, engine="python"))
            continue
        live[os.fsencode(path)] = _Open(path, fd, size, head)
    try:
        failed = _run(args, live, spec) if live else None
        for f in live.values():
            if failed is not None:
                # grep could not read these files (a line longer than its memory limit, or another failure):
                # the Python engine reads them in bounded chunks, so nothing is lost and memory stays bounded
                out = scan_file(f.path, ScanSpec(spec.sigs, engine="python"))
                out["engine"] = f"python (grep failed: {failed[:120]})"
                results[f.path] = out
            else:
                results[f.path] = _finish(f, spec)
    finally:
        for f in live.values():
            os.close(f.fd)
    return [results[p] for p in paths]


def _limit_memory() -> None:  # pragma: no cover — runs in the grep child between fork and exec
    try:
        resource.setrlimit(resource.RLIMIT_AS, (GREP_MAX_AS, GREP_MAX_AS))
    except (ValueError, OSError):
        pass


def _lines(stream: Any) -> Any:
    """The lines of grep's output, each cut to ``MAX_OUT_LINE`` bytes (memory bounded per line)."""
    while True:
        raw = stream.readline(MAX_OUT_LINE)
        if not raw:
            return
        if not raw.endswith(b"\n") and len(raw) >= MAX_OUT_LINE:
            while True:  # drop the rest of the over-long line
                more = stream.readline(MAX_OUT_LINE)
                if not more or more.endswith(b"\n"):
                    break
            raw += b"\n"
        yield raw


def _run(args: tuple[str, ...], live: dict[bytes, _Open], spec: ScanSpec) -> str | None:
    """Stream grep's output (``name NUL line:offset:text``) and hand each line to its file's state.

    Returns None when grep read every file, else grep's complaint (the caller rescans with Python).
    """
    proc = subprocess.Popen([*args, "-H", "-Z", "--", *live], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"LC_ALL": "C"}, preexec_fn=_limit_memory)  # fmt: skip
    assert proc.stdout is not None
    with proc:
        for raw in _lines(proc.stdout):
            name, _, rest = raw.partition(b"\0")
            f = live.get(name)
            if f is None:
                continue
            n, off, text = rest.split(b":", 2)
            lineno, offset = int(n), int(off)
            body = text[:-1] if text.endswith(b"\n") else text
            f.last_line = lineno
            if b"\x00" in body:
                f.st.binary_lines += 1
                continue
            end = offset + len(body)
            _handle(f.st, spec, _decode(body, f.st), lineno, partial(_ts_before, f.fd, offset),
                    partial(_banner, f.fd, end), partial(_next_is_rule, f.fd, end),
                    partial(_next_line, f.fd, end), partial(_frames, f.fd, offset))  # fmt: skip
        err = proc.stderr.read(4096).decode("utf-8", "replace").strip() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        return err or f"exit {proc.returncode}"
    return None


def _finish(f: _Open, spec: ScanSpec) -> dict[str, Any]:
    st, out = f.st, f.out
    read_open_raise(st, spec)  # a cut traceback's `raise X("…")` (the fd is still open)
    resolve_progress(st)  # progress lines deferred their time stamp to here (the fd is still open)
    st.last_ts, st.last_ts_text = _ts_before(f.fd, f.size) if f.size else (None, None)
    m0 = TS_BYTES_RE.search(f.head)
    st.first_ts = parse_ts(m0.group(0).decode("ascii")) if m0 else st.last_ts
    # grep hands over only the lines it kept: the last of them is not the file's length. A file that fits in
    # its head is counted there (a pasted excerpt); a longer one keeps the last kept line (counting would
    # read the whole file again)
    whole = f.size <= len(f.head)
    n = f.head.count(b"\n") + (1 if f.head and not f.head.endswith(b"\n") else 0) if whole else f.last_line
    out.update(_summary(st, f.head, f.size, n))
    out["engine"] = "grep"
    if f.size and os.pread(f.fd, 1, f.size - 1) != b"\n":
        out["skipped"].append({"file": f.path, "reason": "last line has no newline (file truncated?)"})
    if st.binary_lines:
        out["skipped"].append({"file": f.path, "reason": f"{st.binary_lines} line(s) with binary content skipped"})
    if st.non_utf8:
        out["skipped"].append({"file": f.path, "reason": f"{st.non_utf8} line(s) not UTF-8 (read as GB18030 or with replacement)"})
    return out
