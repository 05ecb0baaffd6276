"""Readers of the SQLite exports newer profilers write next to (or instead of) the CSV/JSON files.

Table layouts from the official documentation (CANN 8.5 "Data in analysis.db", "Data in
ascend_pytorch_profiler_{Rank_ID}.db", msprof "Profile Data File Reference (DB)") and the readers
of msprof-analyze 26.2.0 (``StepTraceTimeAnalysis.STEP_TRACE_TIME_SQL``, ``tables_config.py``):

- ``analysis.db``: ``StepTraceTime`` (step, computing, communication_not_overlapped, overlapped,
  communication, free, stage, bubble, communication_not_overlapped_and_exclude_receive, preparing; µs),
  ``CommAnalyzerTime`` (hccl_op_name, group_name, start_timestamp µs, elapse_time, transit_time,
  wait_time, synchronization_time, idle_time ms, step, type), ``CommAnalyzerMatrix`` (hccl_op_name,
  group_name, src_rank, dst_rank, transport_type, transit_size MB, transit_time ms, bandwidth, step, type).
- ``ascend_pytorch_profiler[_<rank>].db`` / ``ascend_mindspore_profiler[_<rank>].db``: every string is an
  id into ``STRING_IDS(id, value)``; ``TASK(startNs, endNs, globalTaskId, …)``,
  ``COMPUTE_TASK_INFO(name, globalTaskId, opType, taskType, …)``, ``COMMUNICATION_OP(opName, startNs,
  endNs, groupName, opType, …)``, ``STEP_TIME(id, startNs, endNs)``; times in ns.

Opened read-only with the standard library; a missing table is a Skip naming it, never zeros.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from msdoctor.analysis.profile import op_type
from msdoctor.facts.profile_files import Skip
from msdoctor.facts.profile_readers import Read

PROFILER_DB_RE = re.compile(r"^ascend_(pytorch|mindspore)_profiler(?:_(\d+))?\.db$")
STEP_COLS = ["step", "computing", "communication_not_overlapped", "overlapped", "communication", "free"]
MATRIX_TOTAL_RE = re.compile(r"^([a-z_]+)-(top1|middle|bottom1|bottom2|bottom3|total)$")


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _step_no(v: Any) -> int:
    m = re.search(r"(\d+)", str(v))
    return int(m.group(1)) if m else 0


def read_analysis_db(path: Path, rank: int) -> tuple[dict[str, list[dict[str, Any]]], Read, Skip | None]:
    """{"steps": per-step breakdown rows (ms), "comm": communication.json-like rows, "matrix": link rows}."""
    rec = Read(str(path), "analysis.db", rank)
    out: dict[str, list[dict[str, Any]]] = {"steps": [], "comm": [], "matrix": []}
    try:
        con = _open(path)
        tables = _tables(con)
    except sqlite3.Error as exc:
        return out, rec, Skip(str(path), f"not a readable SQLite file ({exc})", rank)
    try:
        known = {"StepTraceTime", "CommAnalyzerTime", "CommAnalyzerMatrix"} & tables
        if not known:
            return out, rec, Skip(str(path), f"format not known: none of StepTraceTime, CommAnalyzerTime, "
                                             f"CommAnalyzerMatrix (tables: {sorted(tables)[:6]})", rank)  # fmt: skip
        if "StepTraceTime" in tables:
            cols = {r[1] for r in con.execute("PRAGMA table_info(StepTraceTime)")}
            sel = ", ".join(c if c in cols else "NULL" for c in [*STEP_COLS, "bubble", "preparing"])
            for row in con.execute(f"SELECT {sel} FROM StepTraceTime"):  # noqa: S608 (column names from a fixed list)
                s, comp, comm, ovl, _, free, bubble, prep = row
                if comp is None:
                    continue
                step = {"rank": rank, "step": _step_no(s), "compute_ms": float(comp) / 1000, "comm_ms": float(comm or 0) / 1000,
                        "comm_overlapped_ms": float(ovl or 0) / 1000, "free_ms": float(free or 0) / 1000,
                        "data_ms": float(prep) / 1000 if prep is not None else float("nan")}  # fmt: skip
                step["step_ms"] = step["compute_ms"] + step["comm_ms"] + step["free_ms"]
                if bubble is not None:
                    step["bubble_ms"] = float(bubble) / 1000
                out["steps"].append(step)
        if "CommAnalyzerTime" in tables:
            q = ("SELECT hccl_op_name, group_name, start_timestamp, elapse_time, transit_time, wait_time, "
                 "synchronization_time, step, type FROM CommAnalyzerTime")  # fmt: skip
            for name, group, start, el, tr, wt, sy, step, kind in con.execute(q):
                if name is None or el is None or str(name).startswith("Total"):
                    continue
                out["comm"].append({"rank": rank, "step": _step_no(step), "kind": str(kind or "").lower(), "op": str(name),
                                    "type": op_type(str(name)), "group": str(group or ""), "start_us": start,
                                    "elapse_ms": float(el), "transit_ms": float(tr or 0), "wait_ms": float(wt or 0),
                                    "sync_ms": float(sy or 0)})  # fmt: skip
        if "CommAnalyzerMatrix" in tables:
            q = ("SELECT hccl_op_name, group_name, src_rank, dst_rank, transport_type, transit_size, transit_time, "
                 "step, type FROM CommAnalyzerMatrix")  # fmt: skip
            for name, group, src, dst, transport, size, t, step, kind in con.execute(q):
                try:
                    s, d = int(src), int(dst)
                except (TypeError, ValueError):
                    continue
                m = MATRIX_TOTAL_RE.match(str(name))
                if m and m.group(2) != "total":
                    continue  # top1/middle/bottom: statistics of the same links, not added (as msprof-analyze)
                out["matrix"].append({"rank": rank, "step": _step_no(step), "kind": str(kind or "").lower(),
                                      "type": m.group(1) if m else op_type(str(name)), "group": str(group or ""),
                                      "op": str(name), "layout": "total" if m else "op", "src_local": s, "dst_local": d,
                                      "transport": str(transport or ""), "size_mb": float(size or 0),
                                      "time_ms": float(t or 0)})  # fmt: skip
    except sqlite3.Error as exc:
        return {"steps": [], "comm": [], "matrix": []}, rec, Skip(str(path), f"format not known: {exc}", rank)
    finally:
        con.close()
    rec.rows = sum(len(v) for v in out.values())
    rec.note = ", ".join(f"{len(v)} {k} row(s)" for k, v in out.items() if v)
    return out, rec, None


def read_profiler_db(path: Path, rank: int) -> tuple[dict[str, list[dict[str, Any]]], Read, Skip | None]:
    """{"ops": compute op totals [rank, op, count, total_us], "comm": comm events [rank, step, name, type, start_us, ms]}."""
    rec = Read(str(path), PROFILER_DB_RE.sub(r"ascend_\1_profiler.db", path.name), rank)
    out: dict[str, list[dict[str, Any]]] = {"ops": [], "comm": []}
    try:
        con = _open(path)
        tables = _tables(con)
    except sqlite3.Error as exc:
        return out, rec, Skip(str(path), f"not a readable SQLite file ({exc})", rank)
    try:
        if "STRING_IDS" not in tables or not ({"COMPUTE_TASK_INFO", "COMMUNICATION_OP"} & tables):
            return out, rec, Skip(str(path), "format not known: needs STRING_IDS and COMPUTE_TASK_INFO or "
                                             f"COMMUNICATION_OP (tables: {sorted(tables)[:8]})", rank)  # fmt: skip
        steps = list(con.execute("SELECT id, startNs, endNs FROM STEP_TIME")) if "STEP_TIME" in tables else []

        def step_of(ns: float) -> int:
            for sid, a, b in steps:
                if a <= ns < b:
                    return int(sid)
            return 0

        if "COMPUTE_TASK_INFO" in tables and "TASK" in tables:
            q = """SELECT coalesce(t.value, n.value) AS op, count(*), sum(k.endNs - k.startNs) / 1000.0
                   FROM COMPUTE_TASK_INFO c JOIN TASK k ON k.globalTaskId = c.globalTaskId
                   LEFT JOIN STRING_IDS t ON t.id = c.opType LEFT JOIN STRING_IDS n ON n.id = c.name
                   LEFT JOIN STRING_IDS y ON y.id = c.taskType
                   WHERE coalesce(y.value, '') <> 'HCCL' AND coalesce(n.value, '') NOT LIKE 'hcom\\_%' ESCAPE '\\'
                   GROUP BY 1"""
            out["ops"] = [{"rank": rank, "op": str(op), "count": int(n), "total_us": float(us or 0)} for op, n, us in con.execute(q)]
        if "COMMUNICATION_OP" in tables:
            q = """SELECT s.value, c.startNs, c.endNs FROM COMMUNICATION_OP c JOIN STRING_IDS s ON s.id = c.opName"""
            for name, a, b in con.execute(q):
                out["comm"].append({"rank": rank, "step": step_of(a), "name": str(name), "type": op_type(str(name)),
                                    "start_us": a / 1000.0, "ms": (b - a) / 1e6})  # fmt: skip
    except sqlite3.Error as exc:
        return {"ops": [], "comm": []}, rec, Skip(str(path), f"format not known: {exc}", rank)
    finally:
        con.close()
    rec.rows = len(out["comm"]) + sum(o["count"] for o in out["ops"])
    rec.note = f"{sum(o['count'] for o in out['ops'])} compute task(s), {len(out['comm'])} communication op(s)"
    return out, rec, None
