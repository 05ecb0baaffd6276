"""Collector: checkpoints of several ranks → per-file, per-parameter statistics (``ckpt.*`` facts).

MindSpore is imported lazily, only to read ``.ckpt`` files; ``.safetensors`` files are read with the
``safetensors`` package. The collector measures and never judges: for each parameter it records shape,
dtype, float64 sum / sum of squares / max-abs, the count of non-finite values and, against the first
readable file (the reference), the maximum absolute element difference. Whether a difference is a
fault is the checks' decision (``msdoctor/checks/ckpt.py``).

Files are compared within groups: files given one by one form one group; files found in folders are
grouped by their path inside the folder with the rank taken out of it, so ``rank_0/`` and ``rank_1/``
pair ``step_000020.ckpt`` with ``step_000020.ckpt`` (the layout the bundled trainer writes), never step
10 with step 20, and one flat folder of ``net_rank_0.ckpt``, ``net_rank_1.ckpt`` … (or ``rank_0_net.ckpt``,
or MindSpore's ``rank_0/checkpoint_0-1_10.ckpt``) is one group of replicas.

Before any tensor is loaded, the file's own framing is read (:func:`ckpt_framing`, :func:`safetensors_framing`)
to count the tensors it holds and to see whether it was cut: MindSpore's loader returns the first 8
tensors of a checkpoint cut in half without any error, so "read 8" means nothing without "present 16".
A path given twice (or two names of one file) is read once and said to be the same file.

Facts:
  ``ckpt.files``   list of {path, rank, group, format, error, duplicate_of, framing, present, read,
                   params: {name: {shape, dtype, sum, sumsq, maxabs, nonfinite, diff}}}; ``error`` is the
                   reader's message for an unreadable file, ``framing`` what the file's own structure says
                   (records, truncated, cut_at, cut_tag, missing_bytes, error), ``present`` the tensors the
                   file holds by its framing (None: unknown), ``read`` the tensors the reader returned,
                   ``diff`` the max |element difference| against the group's reference (None: not comparable)
  ``ckpt.groups``  {group: reference path (first complete readable file of the group) or None}
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import numpy as np

from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError

SUFFIXES = (".ckpt", ".safetensors")
RANK_RE = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


def group_key(rel: str) -> str:
    """The path inside a folder with the rank taken out: ``rank_3/step_20.ckpt`` → ``rank_*/step_20.ckpt``,
    ``net_rank_3.ckpt`` → ``net_rank_*.ckpt``, and MindSpore's ``rank_3/checkpoint_3-1_10.ckpt`` →
    ``rank_*/checkpoint_*-1_10.ckpt``, so that the ranks' copies of one save fall into one group."""
    parts = list(PurePosixPath(rel).parts)
    rank = None
    for i, part in enumerate(parts):
        m = RANK_RE.search(part)
        if m:
            rank = m.group(1)
            parts[i] = RANK_RE.sub(lambda mm: mm.group(0)[: -len(mm.group(1))] + "*", part)
    if rank is not None and len(parts) > 1:  # ModelCheckpoint(prefix=f"checkpoint_{rank}") under rank_N/
        parts[-1] = re.sub(rf"^([A-Za-z][\w]*?)_{rank}(?=[-_.])", r"\1_*", parts[-1])
    return "/".join(parts)


def expand(paths: Sequence[str | Path]) -> list[tuple[str, Path]]:
    """(group, file) pairs: files as given (group ""); a folder contributes its ``*.ckpt`` /
    ``*.safetensors`` files recursively, grouped by their path inside the folder with the rank taken out
    (:func:`group_key`). Hidden files (e.g. the trainer's ``.tmp-*`` partial saves) are skipped."""
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
            files.extend((group_key(f.relative_to(p).as_posix()), f) for f in found)
        elif p.is_file():
            files.append(("", p))
        else:
            raise InputError(f"{p}: no such file or folder")
    return files


# -- framing: what the file itself says it holds ----------------------------------------------------

CRC_TRAILER = 17  # MindSpore's crc_check=True appends b"crc_num" + 10 bytes (serialization._exec_save)
TAG_PEEK = 4096


def _varint(buf: bytes, i: int) -> tuple[int | None, int]:
    shift = value = 0
    while i < len(buf):
        c = buf[i]
        i += 1
        value |= (c & 0x7F) << shift
        if not c & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            return None, i
    return None, i


def _peek_tag(f: BinaryIO, start: int, available: int) -> str | None:
    """The ``tag`` (parameter name) at the start of a ``Checkpoint.Value`` record, if readable."""
    f.seek(start)
    head = f.read(min(available, TAG_PEEK))
    if not head or head[0] != 0x0A:  # Value.tag is field 1, length-delimited
        return None
    n, i = _varint(head, 1)
    if n is None or i + n > len(head):
        return None
    return head[i : i + n].decode("utf-8", "replace")


def ckpt_framing(path: Path) -> dict[str, Any]:
    """Walk the protobuf framing of a MindSpore ``.ckpt`` without decoding tensors.

    MindSpore writes one ``Checkpoint`` message per tensor (a large tensor in several slices with the
    same tag: ``serialization._write_parameter_data``) back to back, so the file is a run of field-1
    records ``0x0A <length> <Value>``; with ``crc_check`` a 17-byte ``crc_num`` trailer follows. A record
    whose length runs past the end of the file means the file was cut.
    """
    size = path.stat().st_size
    out: dict[str, Any] = {"bytes": size, "records": 0, "tags": [], "truncated": False, "cut_at": None,
                           "cut_tag": None, "missing_bytes": None, "crc": False, "error": None}  # fmt: skip
    tags: list[str] = []
    with path.open("rb") as f:
        end = size
        if size >= CRC_TRAILER:
            f.seek(size - CRC_TRAILER)
            if f.read(7) == b"crc_num":
                end, out["crc"] = size - CRC_TRAILER, True
        off = 0
        while off < end:
            f.seek(off)
            head = f.read(min(20, end - off))
            if head[0] != 0x0A:
                out["error"] = (f"byte {off}: not a checkpoint record (protobuf field {head[0] >> 3}, wire type"
                                f" {head[0] & 7}): not a MindSpore checkpoint, or an encrypted one")  # fmt: skip
                break
            length, i = _varint(head, 1)
            if length is None:  # cut inside the record header
                out.update(truncated=True, cut_at=off)
                break
            body = off + i
            if body + length > end:
                out.update(truncated=True, cut_at=off, missing_bytes=body + length - end,
                           cut_tag=_peek_tag(f, body, end - body))  # fmt: skip
                break
            tags.append(_peek_tag(f, body, length) or f"<record {len(tags)}>")
            off = body + length
    out["records"] = len(tags)
    out["tags"] = list(dict.fromkeys(tags))
    return out


def safetensors_framing(path: Path) -> dict[str, Any]:
    """The safetensors header (8-byte little-endian length + JSON) names every tensor and its byte range;
    a file shorter than the last range was cut."""
    size = path.stat().st_size
    out: dict[str, Any] = {"bytes": size, "records": 0, "tags": [], "truncated": False, "cut_at": None,
                           "cut_tag": None, "missing_bytes": None, "crc": False, "error": None}  # fmt: skip
    with path.open("rb") as f:
        raw = f.read(8)
        n = int.from_bytes(raw, "little") if len(raw) == 8 else None
        if n is None or n > min(size, 100 * 2**20):
            out["error"] = "no safetensors header (the first 8 bytes are not a header length)"
            return out
        try:
            header = json.loads(f.read(n))
        except (ValueError, UnicodeDecodeError):
            out["error"] = "safetensors header is not JSON (cut inside the header?)"
            out["truncated"] = size < 8 + n
            return out
    data = 8 + n
    entries = sorted(((k, v) for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)),
                     key=lambda kv: kv[1].get("data_offsets", [0, 0])[1])  # fmt: skip
    tags = [k for k, _ in entries]
    whole = [k for k, v in entries if data + v.get("data_offsets", [0, 0])[1] <= size]
    out["records"] = len(whole)
    out["tags"] = tags
    if len(whole) < len(tags):
        cut = entries[len(whole)]
        out.update(truncated=True, cut_at=data + cut[1]["data_offsets"][0], cut_tag=cut[0],
                   missing_bytes=data + entries[-1][1]["data_offsets"][1] - size)  # fmt: skip
    return out


def framing(path: Path, fmt: str) -> dict[str, Any]:
    try:
        return safetensors_framing(path) if fmt == "safetensors" else ckpt_framing(path)
    except OSError as exc:
        return {"error": f"cannot be read: {exc.strerror or exc}", "tags": [], "truncated": False}


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
    entry: dict[str, Any] = {"path": str(path), "rank": rank_of(path), "format": fmt, "error": None, "params": {},
                             "duplicate_of": None, "framing": None, "present": None, "read": 0}  # fmt: skip
    reader = _read_safetensors if fmt == "safetensors" else _read_ckpt
    arrays: dict[str, np.ndarray] = {}
    try:
        if path.stat().st_size == 0:  # MindSpore's own message for it blames 'filter_prefix'/'specify_prefix'
            entry["error"] = "empty file (0 bytes)"
            entry["present"] = 0
            return entry, arrays
    except OSError as exc:
        entry["error"] = f"cannot be read: {exc.strerror or exc}"
        return entry, arrays
    fr = framing(path, fmt)
    tags = fr.pop("tags", [])
    present = len(tags) + (1 if fr.get("cut_tag") and fr["cut_tag"] not in tags else 0)
    entry["framing"] = fr
    entry["present"] = None if fr.get("error") and not tags else present
    try:
        for name, arr, dtype in reader(path):
            arrays[name] = arr
            entry["params"][name] = dict(_stats(arr), dtype=dtype)
    # Readers raise ValueError/RuntimeError/OSError (and safetensors its own error type) for corrupt
    # input; whatever the reason, the file is reported unreadable with the reader's text.
    except Exception as exc:  # noqa: BLE001
        entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".strip()
        entry["params"] = {}
        arrays = {}
    entry["read"] = len(entry["params"])
    if entry["present"] is not None and entry["read"] > entry["present"]:
        entry["present"] = entry["read"]  # a reader that knows better than our framing walk
    return entry, arrays


def complete(entry: dict[str, Any]) -> bool:
    """Read without error, not cut, and every tensor the framing counts was returned."""
    fr = entry.get("framing") or {}
    present = entry.get("present")
    return (not entry.get("error") and not entry.get("duplicate_of") and not fr.get("truncated")
            and (present is None or entry.get("read", 0) >= present))  # fmt: skip


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def collect_checkpoints(paths: Sequence[str | Path]) -> Facts:
    """Read every file; one unreadable file becomes an ``error`` entry, the others are still compared."""
    facts = Facts()
    pairs = expand(paths)
    order = list(dict.fromkeys(g for g, _ in pairs))
    entries: list[dict[str, Any]] = []
    groups: dict[str, str | None] = {}
    seen: list[Path] = []
    for group in order:
        # One group at a time: only the group's reference arrays and the current file are in memory.
        reference: dict[str, np.ndarray] | None = None
        groups[group] = None
        members = [p for g, p in pairs if g == group]
        # A cut file is a poor reference: the complete copies, and of those the one holding the most
        # tensors, are read first (cheap: framing only). A file cut exactly between two tensors is
        # well-formed and smaller; against the largest replica it shows (CKPT606).
        def reference_first(p: Path) -> tuple[bool, int]:
            fr = framing(p, "safetensors" if p.suffix == ".safetensors" else "ckpt")
            return bool(fr.get("truncated")), -len(fr.get("tags") or [])

        members.sort(key=reference_first)
        for path in members:
            twin = next((q for q in seen if _same_file(q, path)), None)
            if twin is not None:
                entries.append({"path": str(path), "rank": rank_of(path), "group": group, "error": None,
                                "format": "safetensors" if path.suffix == ".safetensors" else "ckpt",
                                "duplicate_of": str(twin), "framing": None, "present": None, "read": 0,
                                "params": {}})  # fmt: skip
                continue
            seen.append(path)
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
