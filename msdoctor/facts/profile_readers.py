"""Readers of the per-rank CSV files of a profiling tree (MindSpore ``*_ascend_ms``, torch_npu ``*_ascend_pt``).

Every reader goes through :func:`read_csv`: Python's csv module with the delimiter and quote
given explicitly (no sniffing: one ragged row and triple-quoted shapes once made DuckDB guess
``|`` and drop a whole real file), header spellings matched through the schema's ``columns``
aliases, values stripped of the trailing TAB torch_npu writes inside quotes, and a row whose
field count differs from the header's skipped and counted by its line number, never the file.
kernel_details.csv, which can hold millions of rows, is read by DuckDB with the same explicit dialect
and its rejected rows counted. Readers return plain rows plus a :class:`Read` record (coverage) or a
Skip; they never raise.
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from msdoctor.facts.profile_files import SCHEMA, Skip

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # call stacks of operator_details are long


@dataclass
class Read:
    """What one file contributed: rows used and rows skipped (their line numbers)."""

    path: str
    key: str
    rank: int | None
    rows: int = 0
    bad_rows: list[int] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "file": self.key, "rank": self.rank, "rows": self.rows}
        if self.bad_rows:
            d["bad_rows"] = self.bad_rows[:20]
            d["bad_row_count"] = len(self.bad_rows)
        if self.note:
            d["note"] = self.note
        return d


def _aliases(key: str) -> dict[str, list[str]]:
    spec = SCHEMA["files"][key]
    cols: dict[str, list[str]] = {c: [c] for c in spec.get("required", []) + spec.get("optional", [])}
    for name, spellings in (spec.get("columns") or {}).items():
        cols[name] = list(spellings)
    return cols


def num(v: Any) -> float | None:
    """'12.5', '12.5\\t', 'N/A', '' → float or None."""
    if v is None:
        return None
    try:
        x = float(str(v).strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def read_csv(path: Path, key: str, rank: int | None) -> tuple[Iterator[dict[str, str]] | None, Read, Skip | None]:
    """(rows as {canonical column: stripped text}, coverage record, skip). Rows stream lazily.

    Canonical names are the schema's ``columns`` keys (e.g. ``step`` for ``Step ID``/``Step Id``)
    and every other known column under its own name. A file lacking a required column is a Skip.
    """
    rec = Read(str(path), key, rank)
    try:
        f = path.open("r", encoding="utf-8-sig", newline="")
    except OSError as exc:
        return None, rec, Skip(str(path), f"unreadable ({exc.strerror})", rank)
    reader = csv.reader(f, delimiter=",", quotechar='"', doublequote=True, strict=False)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        f.close()
        return None, rec, Skip(str(path), "empty file", rank)
    except (csv.Error, UnicodeDecodeError) as exc:
        f.close()
        return None, rec, Skip(str(path), f"unreadable header ({exc})", rank)
    index: dict[str, int] = {}
    for name, spellings in _aliases(key).items():
        for s in spellings:
            if s in header:
                index[name] = header.index(s)
                break
    required = SCHEMA["files"][key].get("required", [])
    missing = [c for c in required if c not in index]
    if missing:
        f.close()
        return None, rec, Skip(str(path), f"format not known: columns {missing} missing (schema v{SCHEMA['version']})", rank)
    width = len(header)

    def rows() -> Iterator[dict[str, str]]:
        try:
            line = 1
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except (csv.Error, UnicodeDecodeError):
                    line = reader.line_num
                    rec.bad_rows.append(line)
                    continue
                line = reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != width:
                    rec.bad_rows.append(line)
                    continue
                rec.rows += 1
                yield {name: row[i].strip() for name, i in index.items()}
        finally:
            f.close()

    return rows(), rec, None


def bad_rows_note(rec: Read) -> str:
    n = len(rec.bad_rows)
    if not n:
        return ""
    lines = ", ".join(map(str, rec.bad_rows[:5])) + (" …" if n > 5 else "")
    return f"{n} row(s) with a field count unlike the header skipped (line {lines}); {rec.rows} row(s) read"


# -- kernel_details.csv --------------------------------------------------------------------------


def is_comm_kernel(name: str, core: str) -> bool:
    spec = SCHEMA["files"]["kernel_details"]
    return core.upper() == spec["comm_core"] or name.startswith(spec["comm_name_prefix"])


def kernel_rows(path: Path, rank: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Read, Skip | None]:
    """(compute op totals [rank, op, count, total_us], HCCL task rows [rank, step, name, start_us, ms], read, skip).

    HCCL-core / ``hcom_*`` rows are communication: they never count as compute operators. The file can
    hold millions of rows, so DuckDB reads it, but with the delimiter and quote given (no sniffing) and
    rows of another field count rejected into ``reject_errors`` and counted by line, never the file.
    """
    it, rec, skip = read_csv(path, "kernel_details", rank)  # header check and column spellings only
    if it is None:
        return [], [], rec, skip
    it.close()  # type: ignore[attr-defined]
    with path.open("r", encoding="utf-8-sig", newline="") as f:
        header = [h.strip() for h in next(csv.reader(f))]
    spell = {name: next((s for s in spellings if s in header), None) for name, spellings in _aliases("kernel_details").items()}

    def col(name: str) -> str:
        s = spell.get(name)
        return 'NULL' if s is None else '"' + s.replace('"', '""') + '"'

    spec = SCHEMA["files"]["kernel_details"]
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET enable_progress_bar=false")
        con.execute(f"""CREATE TEMP TABLE k AS SELECT {col('name')} AS name, {col('type')} AS type, {col('core')} AS core,
                        TRY_CAST(trim({col('step')}) AS DOUBLE) AS step, TRY_CAST(trim({col('start_us')}) AS DOUBLE) AS start_us,
                        TRY_CAST(trim({col('dur_us')}) AS DOUBLE) AS dur
                        FROM read_csv($p, header=true, all_varchar=true, delim=',', quote='"', escape='"',
                                      store_rejects=true, max_line_size=16777216)""", {"p": str(path)})  # fmt: skip
        rec.bad_rows = [int(r[0]) for r in con.execute("SELECT line FROM reject_errors ORDER BY line").fetchall()]
        rec.rows = int(con.execute("SELECT count(*) FROM k").fetchone()[0])  # type: ignore[index]
        unusable = int(con.execute("SELECT count(*) FROM k WHERE dur IS NULL").fetchone()[0])  # type: ignore[index]
        is_comm = f"(upper(coalesce(core, '')) = '{spec['comm_core']}' OR starts_with(coalesce(name, ''), '{spec['comm_name_prefix']}'))"
        comm = [{"rank": rank, "step": int(st) if st is not None else 0, "name": n, "start_us": t, "ms": d / 1000.0}
                for n, st, t, d in con.execute(f"SELECT name, step, start_us, dur FROM k WHERE dur IS NOT NULL AND {is_comm}").fetchall()]  # fmt: skip
        # a MemSet helper task carries Type "0" (msinsight rank 0, NonZero_MemSet): name it by its Name
        ops = [{"rank": rank, "op": op, "count": int(n), "total_us": float(us)} for op, n, us in con.execute(f"""
                SELECT CASE WHEN coalesce(type, '') IN ('', '0', 'N/A') THEN name ELSE type END, count(*), sum(dur)
                FROM k WHERE dur IS NOT NULL AND NOT {is_comm} GROUP BY 1""").fetchall()]  # fmt: skip
    except duckdb.Error as exc:
        return [], [], rec, Skip(str(path), f"format not known: DuckDB could not read it ({str(exc).splitlines()[0][:160]})", rank)
    finally:
        con.close()
    rec.rows -= unusable
    rec.note = bad_rows_note(rec)
    if unusable:
        rec.note = (rec.note + "; " if rec.note else "") + f"{unusable} row(s) without a numeric Duration(us)"
    if comm:
        rec.note = (rec.note + "; " if rec.note else "") + f"{len(comm)} HCCL task(s) counted as communication"
    return ops, comm, rec, None


# -- op_statistic.csv ----------------------------------------------------------------------------


def op_statistic_rows(path: Path, rank: int) -> tuple[list[dict[str, Any]], Read, Skip | None]:
    """Per op type: count and total time (µs); HCCL-core types left out (communication)."""
    it, rec, skip = read_csv(path, "op_statistic", rank)
    if it is None:
        return [], rec, skip
    out = []
    for r in it:
        n, t = num(r.get("Count")), num(r.get("Total Time(us)"))
        if n is None or t is None:
            continue
        if is_comm_kernel(r.get("OP Type", ""), r.get("Core Type", "")):
            continue
        out.append({"rank": rank, "op": r.get("OP Type", ""), "core": r.get("Core Type", ""), "count": int(n), "total_us": t})
    rec.note = bad_rows_note(rec)
    return out, rec, None


# -- memory ------------------------------------------------------------------------------------


def memory_components(path: Path, rank: int) -> tuple[list[dict[str, Any]], Read, Skip | None]:
    """memory_record.csv: per component (APP, PTA, GE, …) peak allocated / reserved MB, never mixed."""
    it, rec, skip = read_csv(path, "memory_record", rank)
    if it is None:
        return [], rec, skip
    comp: dict[str, dict[str, Any]] = {}
    for r in it:
        c = r.get("Component") or "?"
        d = comp.setdefault(c, {"rank": rank, "component": c, "peak_allocated_mb": None, "peak_reserved_mb": None,
                                "records": 0, "device": r.get("Device Type", "")})  # fmt: skip
        d["records"] += 1
        for col, k in (("Total Allocated(MB)", "peak_allocated_mb"), ("Total Reserved(MB)", "peak_reserved_mb")):
            v = num(r.get(col))
            if v is not None and (d[k] is None or v > d[k]):
                d[k] = v
    rec.note = bad_rows_note(rec)
    return [comp[c] for c in sorted(comp)], rec, None


def operator_memory(path: Path, rank: int, top: int = 5) -> tuple[dict[str, Any] | None, Read, Skip | None]:
    """operator_memory.csv: allocations count, total and largest (KB) by operator name."""
    it, rec, skip = read_csv(path, "operator_memory", rank)
    if it is None:
        return None, rec, skip
    by: dict[str, list[float]] = {}
    for r in it:
        kb = num(r.get("Size(KB)"))
        if kb is None:
            continue
        acc = by.setdefault(r.get("Name", ""), [0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += kb
        acc[2] = max(acc[2], kb)
    rec.note = bad_rows_note(rec)
    ranked = sorted(by.items(), key=lambda kv: -kv[1][2])[:top]
    return {"rank": rank, "allocations": int(sum(v[0] for v in by.values())),
            "total_mb": round(sum(v[1] for v in by.values()) / 1024.0, 3),
            "largest": [{"op": k, "count": int(v[0]), "max_mb": round(v[2] / 1024.0, 3)} for k, v in ranked]}, rec, None  # fmt: skip


def module_memory(path: Path, rank: int) -> tuple[list[dict[str, Any]], Read, Skip | None]:
    """npu_module_mem.csv: per CANN module (SLOG, APP, HCCL, …) peak reserved MB."""
    it, rec, skip = read_csv(path, "npu_module_mem", rank)
    if it is None:
        return [], rec, skip
    peak: dict[str, float] = {}
    for r in it:
        v = num(r.get("Total Reserved(MB)"))
        if v is not None:
            c = r.get("Component", "?")
            peak[c] = max(peak.get(c, 0.0), v)
    rec.note = bad_rows_note(rec)
    return [{"rank": rank, "module": c, "peak_reserved_mb": round(v, 3)} for c, v in sorted(peak.items(), key=lambda kv: -kv[1])], rec, None


def static_memory(path: Path, rank: int) -> tuple[dict[str, Any] | None, Read, Skip | None]:
    """static_op_mem.csv: static graph memory per graph (KB → MB), with the largest ops."""
    it, rec, skip = read_csv(path, "static_op_mem", rank)
    if it is None:
        return None, rec, skip
    total = 0.0
    ops: list[tuple[float, str]] = []
    for r in it:
        kb = num(r.get("Size(KB)"))
        if kb is None:
            continue
        total += kb
        ops.append((kb, r.get("Op Name", "")))
    ops.sort(reverse=True)
    rec.note = bad_rows_note(rec)
    return {"rank": rank, "ops": len(ops), "total_mb": round(total / 1024.0, 3),
            "largest": [{"op": n, "mb": round(kb / 1024.0, 3)} for kb, n in ops[:5]]}, rec, None  # fmt: skip


def operator_details(path: Path, rank: int, top: int = 5) -> tuple[dict[str, Any] | None, Read, Skip | None]:
    """operator_details.csv: host-side framework ops, their host self time (µs) summed per name."""
    it, rec, skip = read_csv(path, "operator_details", rank)
    if it is None:
        return None, rec, skip
    by: dict[str, list[float]] = {}
    for r in it:
        us = num(r.get("Host Self Duration(us)"))
        if us is None:
            continue
        acc = by.setdefault(r.get("Name", ""), [0, 0.0])
        acc[0] += 1
        acc[1] += us
    rec.note = bad_rows_note(rec)
    ranked = sorted(by.items(), key=lambda kv: -kv[1][1])[:top]
    return {"rank": rank, "ops": int(sum(v[0] for v in by.values())),
            "host_self_ms": round(sum(v[1] for v in by.values()) / 1000.0, 3),
            "top": [{"op": k, "count": int(v[0]), "host_self_ms": round(v[1] / 1000.0, 3)} for k, v in ranked]}, rec, None  # fmt: skip
