"""Discovery of a MindSpore profiling tree, and readers of its small files.

A tree holds one ``<host>_<pid>_<ts17>_ascend_ms/`` folder per rank (MindSpore 2.10, Ascend or
CPU). The rank comes from ``profiler_info_<rank>.json`` (Ascend), else from the suffix of
``FRAMEWORK/cpu_op_*_<rank>.csv`` (CPU, where profiler_info is not written), else from the folder
order (said so in the result). What each reader relies on is in ``msdoctor/data/profile_schema.toml``;
a file that does not match is returned as a *skip* with the reason, never read as zeros.
Readers never raise for bad input.
"""

from __future__ import annotations

import csv
import os
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from msdoctor.errors import InputError

RANK_INFO_RE = re.compile(r"^profiler_info_(\d+)\.json$")
CPU_OP_RE = re.compile(r"^cpu_op_(?:type_info|detail_info|execute_timestamp)_(\d+)\.(?:csv|txt)$")
FOLDER_TS_RE = re.compile(r"_(\d{14,17})_ascend_(?:ms|pt)$")
# files of ASCEND_PROFILER_OUTPUT/ read by a reader (schema keys); everything else there is listed as ignored
READ_KEYS = ("trace_view", "step_trace_time", "kernel_details", "op_statistic", "communication",
             "communication_matrix", "memory_record", "dataset", "operator_memory", "npu_module_mem",
             "static_op_mem", "operator_details")  # fmt: skip
MAX_DEPTH = 5
PROFILER_DB_RE = re.compile(r"^ascend_(?:pytorch|mindspore)_profiler(?:_\d+)?\.db$")


def load_schema() -> dict[str, Any]:
    text = resources.files("msdoctor.data").joinpath("profile_schema.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


SCHEMA = load_schema()


@dataclass
class Skip:
    """A file or folder that was not used, and why (reported by rule PERF306)."""

    path: str
    reason: str
    rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "rank": self.rank}


@dataclass
class RankDir:
    rank: int
    path: Path
    rank_source: str  # profiler_info | cpu_op suffix | folder order
    files: dict[str, Path] = field(default_factory=dict)
    capture: str = "."  # the top folder under the root that holds it ("." when directly under the root)

    @property
    def framework(self) -> str:
        if self.path.name.endswith("_ascend_pt"):
            return "torch_npu"
        if self.path.name.endswith("_ascend_ms"):
            return "mindspore"
        return ""


@dataclass
class Discovery:
    root: Path
    ranks: list[RankDir]
    skipped: list[Skip]
    ignored: list[dict[str, Any]] = field(default_factory=list)


def _rank_folders(root: Path) -> list[Path]:
    """Folders that are a rank's output: ``*_ascend_ms`` or any holding ASCEND_PROFILER_OUTPUT/."""
    found: list[Path] = []
    base_depth = len(root.parts)
    for dirpath, dirnames, _ in os.walk(root):
        p = Path(dirpath)
        if p.name.endswith(("ascend_ms", "ascend_pt")) or "ASCEND_PROFILER_OUTPUT" in dirnames:
            found.append(p)
            dirnames[:] = []  # a rank folder's insides are not more ranks
            continue
        if len(p.parts) - base_depth >= MAX_DEPTH:
            dirnames[:] = []
        dirnames.sort()
    return found


def _folder_ts(p: Path) -> int:
    m = FOLDER_TS_RE.search(p.name)
    return int(m.group(1)) if m else 0


def _rank_of(folder: Path) -> tuple[int | None, str, Path | None]:
    infos = sorted(f for f in folder.iterdir() if RANK_INFO_RE.match(f.name))
    if infos:
        rank = int(RANK_INFO_RE.match(infos[0].name).group(1))  # type: ignore[union-attr]
        return rank, "profiler_info", infos[0]
    fw = folder / "FRAMEWORK"
    if fw.is_dir():
        for f in sorted(fw.iterdir()):
            m = CPU_OP_RE.match(f.name)
            if m:
                return int(m.group(1)), "cpu_op suffix", None
    return None, "folder order", None


def _capture_of(root: Path, folder: Path) -> str:
    rel = folder.relative_to(root).parts
    return rel[0] if len(rel) > 1 else "."


def _scan_folder(folder: Path, rd: RankDir, ignored: list[dict[str, Any]]) -> None:
    for key in READ_KEYS:
        p = folder / SCHEMA["files"][key]["path"]
        if p.is_file():
            rd.files[key] = p
    meta = folder / "profiler_metadata.json"
    if meta.is_file():
        rd.files["profiler_metadata"] = meta
    fw = folder / "FRAMEWORK"
    if fw.is_dir():
        for f in fw.glob("cpu_op_type_info_*.csv"):
            rd.files["cpu_op_type_info"] = f
    out = folder / "ASCEND_PROFILER_OUTPUT"
    if out.is_dir():
        for f in sorted(out.glob("*.db")):
            if f.name == "analysis.db":
                rd.files["analysis_db"] = f
            elif PROFILER_DB_RE.match(f.name):
                rd.files["profiler_db"] = f
        known = {p.name for k, p in rd.files.items() if p.parent == out}
        for f in sorted(out.iterdir()):
            if f.is_file() and f.name not in known:
                ignored.append({"path": str(f), "rank": rd.rank, "reason": "not a file msdoctor analyses (no rule reads it)"})


def discover(root: Path) -> Discovery:
    """Find every rank's folder under ``root``; raise InputError when there is nothing at all, or when
    the root holds several separate captures (they are never merged into one job)."""
    if not root.exists():
        raise InputError(f"{root}: no such directory")
    if not root.is_dir():
        raise InputError(f"{root}: not a directory (expected a profiler output folder)")
    skipped: list[Skip] = []
    ignored: list[dict[str, Any]] = []
    found: list[RankDir] = []
    for folder in _rank_folders(root):
        try:
            rank, source, info = _rank_of(folder)
        except OSError as exc:
            skipped.append(Skip(str(folder), f"unreadable folder ({exc.strerror})"))
            continue
        rd = RankDir(rank if rank is not None else -1, folder, source, capture=_capture_of(root, folder))
        if info is not None:
            rd.files["profiler_info"] = info
        _scan_folder(folder, rd, ignored)
        if not (folder / "ASCEND_PROFILER_OUTPUT").is_dir() and "cpu_op_type_info" not in rd.files:
            skipped.append(Skip(str(folder), "no ASCEND_PROFILER_OUTPUT/ and no FRAMEWORK/cpu_op_* files"))
            continue
        found.append(rd)
    check_single_capture(root, found)
    by_rank: dict[int, RankDir] = {}
    unnumbered: list[RankDir] = []
    for rd in found:
        if rd.rank < 0:
            unnumbered.append(rd)
            continue
        prev = by_rank.get(rd.rank)
        if prev is not None:
            # Same rule as msprof-analyze: the folder with the later timestamp wins.
            keep, drop = (rd, prev) if _folder_ts(rd.path) > _folder_ts(prev.path) else (prev, rd)
            why = "newer timestamp in its name" if _folder_ts(keep.path) != _folder_ts(drop.path) else "found first"
            skipped.append(Skip(str(drop.path), f"rank {rd.rank} twice: kept {keep.path} ({why}), this copy ignored", rd.rank))
            by_rank[rd.rank] = keep
        else:
            by_rank[rd.rank] = rd
    nxt = max(by_rank, default=-1) + 1
    for rd in sorted(unnumbered, key=lambda r: str(r.path)):
        rd.rank = nxt
        nxt += 1
        by_rank[rd.rank] = rd
    if not by_rank:
        raise InputError(f"{root}: no MindSpore profiler output found (no *_ascend_ms folder with data)")
    ranks = [by_rank[r] for r in sorted(by_rank)]
    kept = {str(rd.path) for rd in ranks}
    ignored = [i for i in ignored if any(i["path"].startswith(k + "/") for k in kept)]
    return Discovery(root, ranks, skipped, ignored)


def check_single_capture(root: Path, found: list[RankDir]) -> None:
    """Rank folders in several top folders of the root are one job only when no rank number repeats
    across them and they come from one framework; else they are separate captures: InputError naming them."""
    by_cap: dict[str, list[RankDir]] = {}
    for rd in found:
        by_cap.setdefault(rd.capture, []).append(rd)
    if len(by_cap) < 2:
        return
    seen: dict[int, str] = {}
    clash = None
    for cap, rds in sorted(by_cap.items()):
        for rd in rds:
            if clash is None and rd.rank >= 0 and rd.rank in seen and seen[rd.rank] != cap:
                clash = f"rank {rd.rank} is in {seen[rd.rank]} and {cap}"
            seen.setdefault(rd.rank, cap)
    frameworks = {rd.framework for rd in found if rd.framework}
    unnumbered = sorted({rd.capture for rd in found if rd.rank < 0 or rd.rank_source == "folder order"})
    days = {str(_folder_ts(rd.path))[:8] for rd in found if _folder_ts(rd.path)}
    if clash is None and len(frameworks) < 2 and not unnumbered and len(days) < 2:
        return
    if clash is None and unnumbered:
        clash = f"{unnumbered[0]} has no rank numbers to line up with the others"
    if clash is None and len(days) > 1:
        clash = f"captured on different days ({', '.join(sorted(days))})"
    why = clash or f"frameworks differ ({', '.join(sorted(frameworks))})"
    caps = "; ".join(f"{cap} ({len(rds)} rank folder(s))" for cap, rds in sorted(by_cap.items()))
    raise InputError(f"{root} holds {len(by_cap)} separate profiler captures ({why}), not merged into one job: {caps}. "
                     f"Analyse one at a time: msdoctor analyze {root / sorted(by_cap)[0]}")  # fmt: skip


# -- small-file readers: (value, None) or (None, Skip) ----------------------------------------


def read_json_file(path: Path, rank: int | None = None) -> tuple[Any, Skip | None]:
    try:
        return orjson.loads(path.read_bytes()), None
    except OSError as exc:
        return None, Skip(str(path), f"unreadable ({exc.strerror})", rank)
    except orjson.JSONDecodeError as exc:
        return None, Skip(str(path), f"not valid JSON ({exc.msg} at byte {exc.pos})", rank)


def csv_header(path: Path, rank: int | None = None) -> tuple[list[str] | None, Skip | None]:
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as f:
            row = next(csv.reader([f.readline()]), None)
    except (OSError, UnicodeDecodeError) as exc:
        return None, Skip(str(path), f"unreadable ({exc})", rank)
    if not row:
        return None, Skip(str(path), "empty file", rank)
    return [c.strip() for c in row], None


def check_csv(path: Path, key: str, rank: int | None = None) -> Skip | None:
    """None when the header holds every column the schema requires for ``key``."""
    header, skip = csv_header(path, rank)
    if skip:
        return skip
    required = SCHEMA["files"][key]["required"]
    missing = [c for c in required if c not in (header or [])]
    if missing:
        return Skip(str(path), f"format not known: columns {missing} missing (schema v{SCHEMA['version']})", rank)
    return None


def rank_info(path: Path, rank: int) -> tuple[dict[str, Any], Skip | None]:
    data, skip = read_json_file(path, rank)
    if skip:
        return {}, skip
    if not isinstance(data, dict):
        return {}, Skip(str(path), "format not known: not a JSON object", rank)
    ms = data.get("ms_profiler_info") or {}
    out = {"ms_version": data.get("ms_version"), "cann_version": data.get("cann_version"),
           "jit_level": data.get("jit_level"), "rank_id": ms.get("rank_id"),
           "framework": "mindspore" if ("ms_profiler_info" in data or "ms_version" in data) else None}  # fmt: skip
    if out["rank_id"] is None and any(k in data for k in SCHEMA["files"]["profiler_info"]["torch_keys"]):
        # torch_npu: {"config": {"common_config", "experimental_config"}, "end_info", "rank_id"}
        out["rank_id"] = data.get(SCHEMA["files"]["profiler_info"]["torch_rank_key"])
        out["framework"] = "torch_npu"
        exp = (data.get("config") or {}).get("experimental_config") or {}
        out["torch_npu_level"] = exp.get("_profiler_level")
    if out["rank_id"] is not None and str(out["rank_id"]) != str(rank):
        return out, Skip(str(path), f"rank_id {out['rank_id']} inside disagrees with the file name", rank)
    return out, None


def parallel_groups(path: Path, rank: int) -> tuple[dict[str, dict[str, Any]], Skip | None]:
    """{comm name: {group_name, global_ranks}} from profiler_metadata.json."""
    data, skip = read_json_file(path, rank)
    if skip:
        return {}, skip
    info = data.get("parallel_group_info") if isinstance(data, dict) else None
    if info is None:
        return {}, None  # the key is absent on single-device runs: not a format problem
    if not isinstance(info, dict):
        return {}, Skip(str(path), "format not known: parallel_group_info is not an object", rank)
    out: dict[str, dict[str, Any]] = {}
    for name, g in info.items():
        if isinstance(g, dict) and isinstance(g.get("global_ranks"), list):
            ranks = [int(r) for r in g["global_ranks"] if str(r).lstrip("-").isdigit()]
            out[str(name)] = {"group_name": str(g.get("group_name", name)), "global_ranks": ranks}
    return out, None


def double_hash(data: str) -> int:
    """The ``@<group>`` suffix of HCCL op names: two 32-bit polynomial hashes (×29, ×131) concatenated.

    Same as msprof-analyze 26.2.0 ``cluster_analyse/common_func/utils.py: double_hash``.
    """
    h0 = h1 = 0
    for ch in data:
        h0 = (h0 * 29 + ord(ch)) & 0xFFFFFFFF
        h1 = (h1 * 131 + ord(ch)) & 0xFFFFFFFF
    return (h0 << 32) | h1
