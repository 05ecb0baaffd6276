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
    tmp = final.parent / f".tmp-{os.getpid()}-{final.name}"  # same filesystem: rename is atomic
    try:
        write(str(tmp))
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    rotate(final.parent, keep)
    return final


def rotate(directory: str | Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints; returns the deleted paths."""
    found = list_ckpts(directory)
    doomed = [p for _, p in found[:-keep]] if keep > 0 else []
    for p in doomed:
        p.unlink(missing_ok=True)
    return doomed
