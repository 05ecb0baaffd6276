"""Reading what a user names, and writing where a user points, without being fooled by the file system.

Bottom layer (no msdoctor imports but :mod:`msdoctor.errors`). Every option that takes a file reads it
through :func:`read_input`, so a FIFO, a device, a directory or a symlink loop in place of a file is one
clear :class:`~msdoctor.errors.InputError` (exit 2) instead of a reader blocked forever or a traceback,
and a file larger than the reader's cap is refused before it is loaded. Every output path goes through
:func:`check_output`, so ``--dump-facts /dev/full`` or a symlink planted at the output never replaces
what it points to. :func:`printable` strips control characters from text taken from input before it
reaches a terminal (an ``ESC]0;…BEL`` in a worker log must not retitle the user's terminal).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from msdoctor.errors import InputError

MiB = 1024 * 1024
# Caps for files that are parsed whole (JSON, TOML, KEY=VALUE). Logs and traces are streamed elsewhere.
DEFAULT_CAP = 256 * MiB

_KIND = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
    stat.S_IFLNK: "a symbolic link",
}


def kind_of(mode: int) -> str:
    return _KIND.get(stat.S_IFMT(mode), "not a regular file")


def not_regular(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a file (missing, a FIFO, a directory, a symlink loop), or None.
    Never opens the file, so never blocks."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        return f"cannot read ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return f"is {kind_of(st.st_mode)}, not a regular file"
    return None


def read_input(path: str | Path, what: str, cap: int = DEFAULT_CAP) -> bytes:
    """The bytes of a regular file named on the command line. Opened non-blocking and checked with
    ``fstat`` on the open descriptor (no race between the check and the read): anything else is an
    :class:`InputError` naming ``what`` (e.g. ``--rank-table``) and the reason."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{what} {p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{what} {p}: is a directory, not a file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{what} {p}: a symbolic link loop") from None
        raise InputError(f"{what} {p}: cannot read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what} {p}: is {kind_of(st.st_mode)}, not a regular file")
        if st.st_size > cap:
            raise InputError(f"{what} {p}: {st.st_size} bytes, larger than the {cap // MiB} MiB this reader accepts")
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError as exc:
                raise InputError(f"{what} {p}: cannot read ({exc.strerror or exc})") from None
            if not chunk:
                break
            total += len(chunk)
            if total > cap:  # grew while being read
                raise InputError(f"{what} {p}: larger than the {cap // MiB} MiB this reader accepts")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_input_text(path: str | Path, what: str, cap: int = DEFAULT_CAP) -> str:
    """:func:`read_input` decoded as UTF-8; binary data (a NUL byte) or another encoding is an InputError."""
    data = read_input(path, what, cap)
    if b"\x00" in data:
        raise InputError(f"{what} {path}: binary data, expected text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None


def check_output(path: str | Path, what: str) -> Path:
    """An output path the user named: refused when it exists and is not a regular file (a device such
    as /dev/full, a FIFO, a directory) or is a symbolic link (never write through one). Returns it."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        if not p.parent.is_dir():
            raise InputError(f"{what} {p}: cannot write (its folder {p.parent} does not exist)") from None
        return p
    except OSError as exc:
        raise InputError(f"{what} {p}: cannot be used ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{what} {p}: is a symbolic link; refusing to write through it")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {p}: is {kind_of(st.st_mode)}; refusing to replace it")
    return p


def write_output(path: str | Path, data: bytes, what: str) -> None:
    """Write ``data`` to a checked output path (created, or a regular file truncated in place)."""
    p = check_output(path, what)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags, 0o644)
    except OSError as exc:
        raise InputError(f"{what} {p}: cannot write ({exc.strerror or exc})") from None
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError as exc:
        raise InputError(f"{what} {p}: cannot write ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


# C0 controls but tab and newline, DEL, C1 controls; and the Unicode bidi overrides that reorder text.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def printable(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown as ``\\x1b`` (etc.): safe for a terminal, a TUI and
    the human-readable fields of JSON. Newlines are escaped too unless ``keep_newlines``."""
    out = _CONTROL.sub(_escape, text)
    if not keep_newlines:
        out = out.replace("\n", "\\n").replace("\r", "\\r")
    return out
