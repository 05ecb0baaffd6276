"""Checkpoint files: atomic save (write a temp file, then rename), keep the last K, find the latest.

Layout: ``RUN/ckpt/rank_<r>/step_<NNNNNN>.ckpt``. Only rank 0 saves unless an injection needs
every rank's replica for comparison (``desync-layernorm``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

NAME_RE = re.compile(r"^step_(\d{6,})\.ckpt$")
TMP_RE = re.compile(r"^\.tmp-(\d+)-step_\d{6,}\.(?:ckpt|tmp)$")  # ours, or MindSpore's own temp inside it


def rank_dir(ckpt_root: str | Path, rank: int) -> Path:
    return Path(ckpt_root) / f"rank_{rank}"


def ckpt_path(ckpt_root: str | Path, rank: int, step: int) -> Path:
    return rank_dir(ckpt_root, rank) / f"step_{step:06d}.ckpt"


def list_ckpts(directory: str | Path) -> list[tuple[int, Path]]:
    """Complete checkpoints in ``directory``, oldest first (temp files never match the name pattern)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    out = []
    for p in d.iterdir():
        m = NAME_RE.match(p.name)
        if m and p.is_file():
            out.append((int(m.group(1)), p))
    return sorted(out)


def latest(directory: str | Path) -> tuple[int, Path] | None:
    found = list_ckpts(directory)
    return found[-1] if found else None


def save_atomic(write: Callable[[str], None], ckpt_root: str | Path, rank: int, step: int, keep: int) -> Path:
    """``write(tmp_path)`` writes the file; it becomes visible under its final name only when complete.

    A crash while writing leaves a ``.tmp-*`` file that :func:`list_ckpts` ignores, never a
    truncated ``step_*.ckpt`` that a resume would load.
    """
    final = ckpt_path(ckpt_root, rank, step)
    final.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_tmp(final.parent)
    tmp = final.parent / f".tmp-{os.getpid()}-{final.name}"  # same filesystem: rename is atomic
    try:
        write(str(tmp))
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    rotate(final.parent, keep)
    return final


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def clean_stale_tmp(directory: str | Path) -> list[Path]:
    """Delete the temp files of saves whose process is gone (killed mid-write); returns them.

    A save in progress (its pid, in the file name, still alive) is left alone, so two savers of
    one directory never delete each other's file; our own pid is never "in progress" here because a
    process saves one checkpoint at a time.
    """
    d = Path(directory)
    if not d.is_dir():
        return []
    gone = []
    for p in d.iterdir():
        m = TMP_RE.match(p.name)
        if m is None:
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or not _alive(pid):
            p.unlink(missing_ok=True)
            gone.append(p)
    return gone


def rotate(directory: str | Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints; returns the deleted paths."""
    found = list_ckpts(directory)
    doomed = [p for _, p in found[:-keep]] if keep > 0 else []
    for p in doomed:
        p.unlink(missing_ok=True)
    return doomed
