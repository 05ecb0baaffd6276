"""Readers of ``communication.json`` and ``communication_matrix.json`` (one rank each).

Both are small (one record per HCCL op or link, not per trace event), so orjson reads them and
they become plain rows for a pandas frame. Structure and units: profiler-formats.md §3b.
Readers never raise: (rows, skip-or-None).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msdoctor.analysis.profile import op_type
from msdoctor.facts.profile_files import SCHEMA, Skip, read_json_file

STEP_RE = re.compile(SCHEMA["files"]["communication"]["step_key"])
MATRIX_KEY_RE = re.compile(r"^([a-z_]+)-(top1|middle|bottom1|bottom2|bottom3|total)@(.+)$")
MATRIX_OP_RE = re.compile(SCHEMA["files"]["communication_matrix"]["op_key"])
LINK_RE = re.compile(r"^(\d+)-(\d+)$")


def step_no(key: str) -> int | None:
    if not STEP_RE.match(key):
        return None
    digits = key[4:]
    return int(digits) if digits else 0


def _num(d: dict[str, Any], key: str) -> float | None:
    v = d.get(key)
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v))
    except (TypeError, ValueError):
        return None


def comm_rows(path: Path, rank: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Skip | None]:
    """(op rows, bandwidth rows, skip) from one rank's communication.json."""
    data, skip = read_json_file(path, rank)
    if skip:
        return [], [], skip
    if not isinstance(data, dict) or not data or not all(step_no(k) is not None for k in data):
        keys = list(data)[:3] if isinstance(data, dict) else type(data).__name__
        return [], [], Skip(str(path), f"format not known: expected step<N> keys, got {keys}", rank)
    ops: list[dict[str, Any]] = []
    bws: list[dict[str, Any]] = []
    tinfo = SCHEMA["files"]["communication"]["time_info"]
    binfo = SCHEMA["files"]["communication"]["bandwidth_info"]
    bad = 0
    for skey, kinds in data.items():
        step = step_no(skey)
        if not isinstance(kinds, dict):
            bad += 1
            continue
        for kind, opmap in kinds.items():
            if kind not in ("collective", "p2p") or not isinstance(opmap, dict):
                continue
            for key, info in opmap.items():
                if key.startswith("Total") or not isinstance(info, dict):
                    continue
                name, _, group = key.partition("@")
                t = info.get(tinfo)
                if not isinstance(t, dict) or _num(t, "Elapse Time(ms)") is None:
                    bad += 1
                    continue
                ops.append({
                    "rank": rank, "step": step, "kind": kind, "op": name, "type": op_type(name), "group": group,
                    "start_us": _num(t, "Start Timestamp(us)"), "elapse_ms": _num(t, "Elapse Time(ms)"),
                    "transit_ms": _num(t, "Transit Time(ms)") or 0.0, "wait_ms": _num(t, "Wait Time(ms)") or 0.0,
                    "sync_ms": _num(t, "Synchronization Time(ms)") or 0.0,
                })  # fmt: skip
                for transport, b in (info.get(binfo) or {}).items():
                    if isinstance(b, dict) and _num(b, "Transit Size(MB)") is not None:
                        bws.append({"rank": rank, "step": step, "type": op_type(name), "group": group,
                                    "transport": transport, "size_mb": _num(b, "Transit Size(MB)"),
                                    "time_ms": _num(b, "Transit Time(ms)") or 0.0})  # fmt: skip
    if not ops:
        reason = f"format not known: no op with '{tinfo}'" if bad else "no communication ops recorded"
        return [], [], Skip(str(path), reason, rank)
    return ops, bws, None


def matrix_rows(path: Path, rank: int) -> tuple[list[dict[str, Any]], Skip | None]:
    """Per-link rows, links in group-local ranks, from either layout: MindSpore's ``<type>-total@<group>``
    entries (layout "total") or torch_npu's per-op ``hcom_<op>__<n>_<m>@<group>`` entries (layout "op");
    the per-rank "Total Op Info" of the latter mixes groups and is not used (msprof-analyze rebuilds it)."""
    data, skip = read_json_file(path, rank)
    if skip:
        return [], skip
    if not isinstance(data, dict) or not all(step_no(k) is not None for k in data):
        return [], Skip(str(path), "format not known: expected step<N> keys", rank)
    rows: list[dict[str, Any]] = []
    for skey, kinds in data.items():
        if not isinstance(kinds, dict):
            continue
        for kind, opmap in kinds.items():
            if not isinstance(opmap, dict):
                continue
            for key, links in opmap.items():
                m = MATRIX_KEY_RE.match(key)
                if m and m.group(2) == "total":
                    layout, typ, group, op = "total", m.group(1), m.group(3), key
                elif not m and (mo := MATRIX_OP_RE.match(key)):
                    layout, typ, group, op = "op", op_type(key.partition("@")[0]), mo.group(2), key.partition("@")[0]
                else:
                    continue
                if not isinstance(links, dict):
                    continue
                for link, info in links.items():
                    lm = LINK_RE.match(link)
                    if not lm or not isinstance(info, dict):
                        continue
                    rows.append({
                        "rank": rank, "step": step_no(skey), "kind": kind, "type": typ, "group": group, "op": op,
                        "layout": layout,
                        "src_local": int(lm.group(1)), "dst_local": int(lm.group(2)),
                        "transport": str(info.get("Transport Type", "")),
                        "size_mb": _num(info, "Transit Size(MB)") or 0.0, "time_ms": _num(info, "Transit Time(ms)") or 0.0,
                    })  # fmt: skip
    if data and not rows:
        return [], Skip(str(path), "format not known: no '<type>-total@<group>' nor 'hcom_<op>…@<group>' link entries", rank)
    return rows, None
