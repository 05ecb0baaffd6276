"""Collector: checkpoints of several ranks → per-file, per-parameter statistics (``ckpt.*`` facts).

MindSpore is imported lazily, only to read ``.ckpt`` files; ``.safetensors`` files are read with the
``safetensors`` package. The collector measures and never judges: for each parameter it records shape,
dtype, float64 sum / sum of squares / max-abs, the count of non-finite values and, against the first
readable file (the reference), the maximum absolute element difference. Whether a difference is a
fault is the checks' decision (``msdoctor/checks/ckpt.py``).

Files are compared within groups: files given one by one form one group; files found in folders are
grouped by their path inside the folder, so ``rank_0/`` and ``rank_1/`` pair ``step_000020.ckpt`` with
``step_000020.ckpt`` (the layout the bundled trainer writes), never step 10 with step 20.

Facts:
  ``ckpt.files``   list of {path, rank, group, format, error, params: {name: {shape, dtype, sum, sumsq,
                   maxabs, nonfinite, diff}}}; ``error`` is the reader's message for an unreadable file,
                   ``diff`` the max |element difference| against the group's reference (None: not comparable)
  ``ckpt.groups``  {group: reference path (first readable file of the group) or None}
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError

SUFFIXES = (".ckpt", ".safetensors")
RANK_RE = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


def expand(paths: Sequence[str | Path]) -> list[tuple[str, Path]]:
    """(group, file) pairs: files as given (group ""); a folder contributes its ``*.ckpt`` /
    ``*.safetensors`` files recursively, grouped by their path inside the folder. Hidden files (e.g. the
    trainer's ``.tmp-*`` partial saves) are skipped."""
    files: list[tuple[str, Path]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(
                f for f in p.rglob("*")
                if f.is_file() and f.suffix in SUFFIXES and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )  # fmt: skip
            if not found:
                raise InputError(f"{p}: no .ckpt or .safetensors files in this folder")
            files.extend((f.relative_to(p).as_posix(), f) for f in found)
        elif p.is_file():
            files.append(("", p))
        else:
            raise InputError(f"{p}: no such file or folder")
    return files


def rank_of(path: Path) -> int | None:
    """The rank a path names (``rank_3/…``, ``…rank3.ckpt``); the innermost mention wins."""
    for part in reversed(path.parts):
        m = RANK_RE.search(part)
        if m:
            return int(m.group(1))
    return None


def _read_ckpt(path: Path) -> Iterator[tuple[str, np.ndarray, str]]:
    import mindspore as ms

    params = ms.load_checkpoint(str(path))
    for name, param in params.items():
        dtype = str(param.dtype)
        try:
            arr = param.asnumpy()
        except (TypeError, RuntimeError):  # bfloat16 has no NumPy dtype: compare it as float32
            arr = param.astype(ms.float32).asnumpy()
        yield name, arr, dtype


def _read_safetensors(path: Path) -> Iterator[tuple[str, np.ndarray, str]]:
    from safetensors.numpy import load_file

    for name, arr in load_file(str(path)).items():
        yield name, arr, str(arr.dtype)


# Statistics run over flat chunks so that a multi-GB tensor never needs a full float64 copy.
CHUNK = 1 << 22


def _chunks(a: np.ndarray) -> Iterator[np.ndarray]:
    flat = a.reshape(-1)
    for start in range(0, flat.size, CHUNK):
        yield flat[start : start + CHUNK]


def _stats(arr: np.ndarray) -> dict[str, Any]:
    a = np.asarray(arr)
    if a.dtype == np.bool_:
        a = a.astype(np.int8)
    floating = np.issubdtype(a.dtype, np.floating)
    total = sumsq = maxabs = 0.0
    nonfinite = 0
    for c in _chunks(a):
        x = c.astype(np.float64)
        if floating:
            bad = ~np.isfinite(x)
            n_bad = int(bad.sum())
            if n_bad:
                nonfinite += n_bad
                x[bad] = 0.0  # statistics over the finite values; the count says how many were not
        total += float(x.sum())
        sumsq += float(np.dot(x, x))
        if x.size:
            maxabs = max(maxabs, float(np.abs(x).max()))
    return {"shape": list(a.shape), "sum": total, "sumsq": sumsq, "maxabs": maxabs, "nonfinite": nonfinite}


def _max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b|; NaN against a number is infinitely different, NaN against NaN is equal."""
    worst = 0.0
    for ca, cb in zip(_chunks(np.asarray(a)), _chunks(np.asarray(b)), strict=True):
        xa, xb = ca.astype(np.float64), cb.astype(np.float64)
        d = np.abs(xa - xb)
        nan_a, nan_b = np.isnan(xa), np.isnan(xb)
        d[nan_a & nan_b] = 0.0
        d[nan_a ^ nan_b] = np.inf
        if d.size:
            worst = max(worst, float(d.max()))
    return worst


def _read(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    fmt = "safetensors" if path.suffix == ".safetensors" else "ckpt"
    entry: dict[str, Any] = {"path": str(path), "rank": rank_of(path), "format": fmt, "error": None, "params": {}}
    reader = _read_safetensors if fmt == "safetensors" else _read_ckpt
    arrays: dict[str, np.ndarray] = {}
    try:
        if path.stat().st_size == 0:  # MindSpore's own message for it blames 'filter_prefix'/'specify_prefix'
            entry["error"] = "empty file (0 bytes)"
            return entry, arrays
        for name, arr, dtype in reader(path):
            arrays[name] = arr
            entry["params"][name] = dict(_stats(arr), dtype=dtype)
    # Readers raise ValueError/RuntimeError/OSError (and safetensors its own error type) for corrupt
    # input; whatever the reason, the file is reported unreadable with the reader's text.
    except Exception as exc:  # noqa: BLE001
        entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".strip()
        entry["params"] = {}
        arrays = {}
    return entry, arrays


def collect_checkpoints(paths: Sequence[str | Path]) -> Facts:
    """Read every file; one unreadable file becomes an ``error`` entry, the others are still compared."""
    facts = Facts()
    pairs = expand(paths)
    order = list(dict.fromkeys(g for g, _ in pairs))
    entries: list[dict[str, Any]] = []
    groups: dict[str, str | None] = {}
    for group in order:
        # One group at a time: only the group's reference arrays and the current file are in memory.
        reference: dict[str, np.ndarray] | None = None
        groups[group] = None
        for path in (p for g, p in pairs if g == group):
            entry, arrays = _read(path)
            entry["group"] = group
            if entry["error"] is None:
                if reference is None:
                    reference, groups[group] = arrays, str(path)
                else:
                    for name, arr in arrays.items():
                        ref = reference.get(name)
                        # No element-wise comparison across shapes: CKPT603 reports those.
                        diff = _max_abs_diff(ref, arr) if ref is not None and ref.shape == arr.shape else None
                        entry["params"][name]["diff"] = diff
            entries.append(entry)
    facts.set("ckpt.files", entries, "checkpoint")
    facts.set("ckpt.groups", groups, "checkpoint")
    return facts
