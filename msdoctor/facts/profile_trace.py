"""DuckDB scans of the big files: every rank's ``trace_view.json`` and ``kernel_details.csv``.

No Python object is made per trace event: DuckDB reads the JSON arrays (all ranks in one query),
keeps the few columns the analyses need in a temporary table, and the SQL below hands small
per-rank/per-step frames to pandas. A ``trace_view.json`` cut short (profiler killed mid-write)
is recovered up to its last complete event by copying that prefix, streamed, to a temporary file
closed with ``]``; the dropped byte count is reported.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pandas as pd

from msdoctor.facts.profile_files import SCHEMA, Skip

TRACE = SCHEMA["files"]["trace_view"]
COLUMNS = "{'name': 'VARCHAR', 'ph': 'VARCHAR', 'pid': 'VARCHAR', 'tid': 'VARCHAR', 'ts': 'VARCHAR', " \
          "'dur': 'VARCHAR', 'args': 'STRUCT(name VARCHAR, \"Task Type\" VARCHAR)'}"  # fmt: skip
# a top-level event starts with one of the keys a Chrome-trace event has; args' inner objects do not
EVENT_START = re.compile(rb'\}\s*,\s*\{\s*"(?:name|ph|pid|tid|ts|dur|cat|args|id|bp|s)"')
TAIL_CHUNK = 1 << 20
MAX_TAIL = 64 << 20
# a collective op name: `hcom_allReduce__…`, `Default/AllReduce-op1`, `Send-op3`; not `BroadcastTo-op0`
COLLECTIVE_RE = (r"(?i)(^|/)(hcom_)?(all_?reduce|all_?gather|reduce_?scatter|broadcast|all_?to_?all(v|vc)?|(batch_?)?send_?recv|send|"
                 r"receive|recv|barrier)(-op\d+|_|$)")  # fmt: skip


def connect(memory_limit: str = "700MB", threads: int | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute(f"SET memory_limit='{memory_limit}'")
    if threads:
        con.execute(f"SET threads={int(threads)}")
    con.execute("SET preserve_insertion_order=false")
    con.execute("SET enable_progress_bar=false")
    return con


@dataclass
class TraceFile:
    rank: int
    path: Path  # the file DuckDB reads (the original, or the recovered copy)
    original: Path
    dropped_bytes: int = 0


def _head_tail(path: Path) -> tuple[bytes, bytes, int]:
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(64)
        f.seek(max(0, size - 64))
        tail = f.read(64)
    return head.lstrip(b"\xef\xbb\xbf \t\r\n"), tail.rstrip(b" \t\r\n\x00"), size


def _last_event_end(path: Path, size: int) -> int | None:
    """Offset just past the ``}`` of the last complete top-level event, searching back from the end."""
    with path.open("rb") as f:
        end = size
        while end > 0 and size - end < MAX_TAIL:
            start = max(0, end - TAIL_CHUNK)
            f.seek(start)
            buf = f.read(min(end + 256, size) - start)  # overlap so a boundary on the seam is seen
            hits = [m.start() for m in EVENT_START.finditer(buf)]
            if hits:
                # the object *after* the last boundary is the cut one; keep up to that boundary's `}`
                return start + hits[-1] + 1
            end = start
    return None


def prepare_trace(rank: int, path: Path, tmpdir: Path) -> tuple[TraceFile | None, Skip | None]:
    """Check the array's ends; recover a truncated file into ``tmpdir``. Never raises."""
    try:
        head, tail, size = _head_tail(path)
    except OSError as exc:
        return None, Skip(str(path), f"unreadable ({exc.strerror})", rank)
    if size == 0:
        return None, Skip(str(path), "empty file", rank)
    if not head.startswith(b"["):
        what = "a JSON object" if head.startswith(b"{") else "not JSON"
        return None, Skip(str(path), f"format not known: {what}, expected a JSON array of trace events", rank)
    if tail.endswith(b"]"):
        return TraceFile(rank, path, path), None
    cut = _last_event_end(path, size)
    if cut is not None:
        cut = _maybe_keep_last(path, cut, size)
    if cut is None:
        return None, Skip(str(path), "truncated, and no complete event found to recover", rank)
    out = tmpdir / f"rank{rank}_recovered_trace_view.json"
    with path.open("rb") as src, out.open("wb") as dst:
        left = cut
        while left > 0:
            chunk = src.read(min(left, 8 << 20))
            if not chunk:
                break
            dst.write(chunk)
            left -= len(chunk)
        dst.write(b"\n]\n")
    return TraceFile(rank, out, path, dropped_bytes=size - cut), None


def _maybe_keep_last(path: Path, cut: int, size: int) -> int:
    """When the text after the last boundary is itself a whole event (only ``]`` was lost), keep it."""
    if size - cut > TAIL_CHUNK:
        return cut
    with path.open("rb") as f:
        f.seek(cut)
        rest = f.read()
    body = rest.lstrip(b" \t\r\n,").rstrip(b" \t\r\n\x00,")
    try:
        ok = isinstance(orjson.loads(body), dict)
    except orjson.JSONDecodeError:
        ok = False
    return cut + len(rest) - len(rest.lstrip(b" \t\r\n,")) + len(body) if ok else cut


def _scan_sql(n: int) -> str:
    return (
        "SELECT f.rank AS rank, e.name, e.ph, e.pid, e.tid, TRY_CAST(e.ts AS DOUBLE) AS ts, "
        "TRY_CAST(e.dur AS DOUBLE) AS dur, e.args.name AS aname "
        f"FROM read_json($files, format='array', filename=true, columns={COLUMNS}, maximum_object_size=16777216) e "
        "JOIN trace_files f ON f.path = e.filename WHERE e.ph IN ('X', 'M') "
        # device kernels (args carry "Task Type") are summed from kernel_details.csv when the rank has it
        "AND (f.keep_kernels OR e.args.\"Task Type\" IS NULL)"
    )


def load_traces(con: duckdb.DuckDBPyConnection, traces: list[TraceFile], drop_kernels: set[int] | None = None) -> list[Skip]:
    """Create table ``ev`` from all traces in one scan; a file DuckDB rejects is skipped alone.

    For the ranks in ``drop_kernels`` the device kernel events are left out of ``ev`` (their op
    time comes from kernel_details.csv): they are most of a trace's events and of the memory.
    """
    drop = drop_kernels or set()
    con.execute("CREATE OR REPLACE TEMP TABLE trace_files (rank INTEGER, path VARCHAR, keep_kernels BOOLEAN)")
    skips: list[Skip] = []
    if not traces:
        _empty_ev(con)
        return skips
    con.executemany("INSERT INTO trace_files VALUES (?, ?, ?)", [[t.rank, str(t.path), t.rank not in drop] for t in traces])
    good = list(traces)
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE ev AS {_scan_sql(len(good))}", {"files": [str(t.path) for t in good]})
        return skips
    except duckdb.Error:
        pass  # find the culprit(s): one bad file must not hide the others
    good = []
    for t in traces:
        try:
            con.execute(f"SELECT count(*) FROM ({_scan_sql(1)})", {"files": [str(t.path)]}).fetchone()
            good.append(t)
        except duckdb.Error as exc:
            msg = str(exc).splitlines()[0][:160]
            skips.append(Skip(str(t.original), f"format not known: DuckDB could not read it ({msg})", t.rank))
    files = [str(t.path) for t in good] or [""]
    if good:
        con.execute(f"CREATE OR REPLACE TEMP TABLE ev AS {_scan_sql(len(good))}", {"files": files})
    else:
        _empty_ev(con)
    return skips


def _empty_ev(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE ev (rank INTEGER, name VARCHAR, ph VARCHAR, pid VARCHAR, "
                "tid VARCHAR, ts DOUBLE, dur DOUBLE, aname VARCHAR)")  # fmt: skip


# -- frames from the ev table -------------------------------------------------------------------


def processes(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute(
        "SELECT DISTINCT rank, pid, aname AS process FROM ev WHERE ph='M' AND name='process_name'"
    ).df()


def build_steps(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Table ``steps`` (rank, step, t0, t1 in µs, marked): ProfilerStep#N events (marked 1), else the
    capture window as step 0 (marked 0)."""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE steps AS
        WITH marked AS (
          SELECT rank, CAST(regexp_extract(name, '#(\\d+)', 1) AS INTEGER) AS step, min(ts) AS t0, max(ts + dur) AS t1,
                 1 AS marked
          FROM ev WHERE ph='X' AND name LIKE '{TRACE["step_event"]}%' AND dur IS NOT NULL GROUP BY 1, 2),
        windows AS (
          SELECT rank, 0 AS step, min(ts) AS t0, max(ts + dur) AS t1, 0 AS marked FROM ev
          WHERE ph='X' AND ts IS NOT NULL AND dur IS NOT NULL AND rank NOT IN (SELECT rank FROM marked) GROUP BY 1)
        SELECT * FROM marked UNION ALL SELECT * FROM windows""")
    return con.execute("SELECT * FROM steps ORDER BY rank, step").df()


def _pids(con: duckdb.DuckDBPyConnection, names: list[str]) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE sel_pids AS SELECT DISTINCT rank, pid FROM ev "
                "WHERE ph='M' AND name='process_name' AND aname IN (SELECT unnest($n))", {"n": names})  # fmt: skip


def overlap_breakdown(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Per rank and step: sums of the "Overlap Analysis" events whose start is in the step (µs).

    An event's category is its name when that is one of the four Overlap Analysis rows, else the
    name of its thread (the row it is drawn on), so either writer convention is read.
    """
    _pids(con, [TRACE["overlap_process"]])
    cats = ", ".join(f"'{c}'" for c in TRACE["overlap_threads"])
    return con.execute(f"""
        WITH threads AS (SELECT DISTINCT rank, pid, tid, aname AS thread FROM ev WHERE ph='M' AND name='thread_name'),
        o AS (SELECT e.rank, e.ts, e.dur, CASE WHEN e.name IN ({cats}) THEN e.name ELSE t.thread END AS cat
              FROM ev e JOIN sel_pids p ON e.rank = p.rank AND e.pid = p.pid
              LEFT JOIN threads t ON e.rank = t.rank AND e.pid = t.pid AND e.tid = t.tid
              WHERE e.ph = 'X' AND e.dur IS NOT NULL)
        SELECT s.rank, s.step, any_value(s.t1 - s.t0) AS step_us,
          sum(CASE WHEN o.cat='Computing' THEN o.dur ELSE 0 END) AS compute_us,
          sum(CASE WHEN o.cat='Communication(Not Overlapped)' THEN o.dur ELSE 0 END) AS comm_us,
          sum(CASE WHEN o.cat='Communication' THEN o.dur ELSE 0 END) AS comm_total_us,
          sum(CASE WHEN o.cat='Free' THEN least(o.ts + o.dur, s.t1) - o.ts ELSE 0 END) AS free_us,
          min(CASE WHEN o.cat IN ('Computing', 'Communication') THEN o.ts END) - any_value(s.t0) AS first_work_us
        FROM o JOIN steps s ON o.rank = s.rank AND o.ts >= s.t0 AND o.ts < s.t1
        GROUP BY 1, 2 ORDER BY 1, 2""").df()


def _union_sql(filter_sql: str) -> str:
    """Length of the union of intervals per (rank, step), gaps-and-islands in SQL."""
    return f"""
      WITH x AS (SELECT rank, step, ts, ts + dur AS te FROM cpu_ev WHERE {filter_sql}),
      y AS (SELECT *, max(te) OVER (PARTITION BY rank, step ORDER BY ts, te
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end FROM x),
      z AS (SELECT *, sum(CASE WHEN prev_end IS NULL OR ts > prev_end THEN 1 ELSE 0 END)
                      OVER (PARTITION BY rank, step ORDER BY ts, te ROWS UNBOUNDED PRECEDING) AS island FROM y)
      SELECT rank, step, sum(len) AS us FROM (SELECT rank, step, max(te) - min(ts) AS len FROM z GROUP BY rank, step, island)
      GROUP BY rank, step"""


def cpu_breakdown(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The same breakdown computed from CPU OP events (CPU profiles have no Overlap Analysis).

    compute = union of non-collective ops; comm = union of collective ops minus compute;
    free = window − union of all ops.
    """
    _pids(con, [TRACE["cpu_process"]])
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE cpu_ev AS
        SELECT e.rank, s.step, e.ts, e.dur, regexp_matches(e.name, '{COLLECTIVE_RE}') AS is_comm
        FROM ev e JOIN sel_pids p ON e.rank = p.rank AND e.pid = p.pid
        JOIN steps s ON e.rank = s.rank AND e.ts >= s.t0 AND e.ts < s.t1
        WHERE e.ph='X' AND e.dur IS NOT NULL""")
    return con.execute(f"""
        WITH busy AS ({_union_sql('true')}), comp AS ({_union_sql('NOT is_comm')}), comm AS ({_union_sql('is_comm')}),
        first AS (SELECT rank, step, min(ts) AS first_ts FROM cpu_ev GROUP BY 1, 2)
        SELECT s.rank, s.step, s.t1 - s.t0 AS step_us, coalesce(comp.us, 0) AS compute_us,
          coalesce(busy.us, 0) - coalesce(comp.us, 0) AS comm_us, coalesce(comm.us, 0) AS comm_total_us,
          (s.t1 - s.t0) - coalesce(busy.us, 0) AS free_us, first.first_ts - s.t0 AS first_work_us
        FROM steps s JOIN busy USING (rank, step) LEFT JOIN comp USING (rank, step)
        LEFT JOIN comm USING (rank, step) LEFT JOIN first USING (rank, step) ORDER BY 1, 2""").df()


def comm_events(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every communication op: HCCL/Communication process events, or collective CPU ops (µs)."""
    _pids(con, list(TRACE["comm_processes"]) + [TRACE["cpu_process"]])
    return con.execute(f"""
        SELECT e.rank, s.step, e.name, e.ts, e.dur FROM ev e
        JOIN sel_pids p ON e.rank = p.rank AND e.pid = p.pid
        JOIN steps s ON e.rank = s.rank AND e.ts >= s.t0 AND e.ts < s.t1
        WHERE e.ph='X' AND e.dur IS NOT NULL
          AND regexp_matches(e.name, '{COLLECTIVE_RE}')
          AND NOT regexp_matches(e.name, '^(Notify|Memcpy|Reduce_Inline|RDMASend)')""").df()


def trace_ops(con: duckdb.DuckDBPyConnection, skip_ranks: set[int]) -> pd.DataFrame:
    """Device kernels (Ascend Hardware) or CPU ops by type, from the trace (fallback for top ops)."""
    _pids(con, [TRACE["hardware_process"], TRACE["cpu_process"]])
    con.execute("DELETE FROM sel_pids WHERE rank IN (SELECT unnest($r))", {"r": sorted(skip_ranks) or [-1]})
    return con.execute("""
        SELECT e.rank, regexp_replace(regexp_replace(e.name, '^.*/', ''), '-op\\d+$', '') AS op,
               count(*) AS count, sum(e.dur) AS total_us
        FROM ev e JOIN sel_pids p ON e.rank = p.rank AND e.pid = p.pid
        WHERE e.ph='X' AND e.dur IS NOT NULL AND NOT starts_with(e.name, 'hcom_') GROUP BY 1, 2""").df()


def loss_report(con: duckdb.DuckDBPyConnection, tf: TraceFile, rank_dirs: list[Any]) -> dict[str, Any]:
    """What a truncated trace lost, in events and in the analyses it feeds: its steps and collectives
    against the median of the other ranks' traces, and against its own communication.json when present."""
    r = tf.rank
    _pids(con, list(TRACE["comm_processes"]) + [TRACE["cpu_process"]])
    counts = con.execute(f"""
        WITH c AS (SELECT e.rank, count(*) AS n FROM ev e JOIN sel_pids p ON e.rank = p.rank AND e.pid = p.pid
                   WHERE e.ph='X' AND regexp_matches(e.name, '{COLLECTIVE_RE}')
                     AND NOT regexp_matches(e.name, '^(Notify|Memcpy|Reduce_Inline|RDMASend)') GROUP BY 1),
             s AS (SELECT rank, count(*) AS n FROM steps WHERE marked = 1 GROUP BY 1),
             a AS (SELECT rank, count(*) AS n, max(ts + coalesce(dur, 0)) AS t_end FROM ev WHERE ph='X' GROUP BY 1)
        SELECT a.rank, a.n, coalesce(s.n, 0), coalesce(c.n, 0), a.t_end FROM a LEFT JOIN s USING (rank)
        LEFT JOIN c USING (rank)""").fetchall()
    mine = next((c for c in counts if c[0] == r), None)
    peers = [c for c in counts if c[0] != r]

    def med(i: int) -> float | None:
        vals = sorted(float(c[i]) for c in peers)
        return vals[len(vals) // 2] if vals else None

    out: dict[str, Any] = {"rank": r, "path": str(tf.original), "dropped_bytes": tf.dropped_bytes,
                           "events_read": int(mine[1]) if mine else 0, "steps_read": int(mine[2]) if mine else 0,
                           "collectives_read": int(mine[3]) if mine else 0}  # fmt: skip
    if peers:
        out["peer_events"] = med(1)
        out["peer_steps"] = med(2)
        out["peer_collectives"] = med(3)
    expected = out.get("peer_collectives")
    comm_json = next((rd.files.get("communication") for rd in rank_dirs if rd.rank == r), None)
    if comm_json is not None:
        try:
            data = orjson.loads(comm_json.read_bytes())
            n = sum(1 for kinds in data.values() if isinstance(kinds, dict) for kind, ops in kinds.items()
                    if isinstance(ops, dict) for k in ops if not k.startswith("Total"))  # fmt: skip
            if n:
                out["collectives_in_communication_json"] = n
                expected = float(n)
        except (OSError, orjson.JSONDecodeError, AttributeError):
            pass
    if expected:
        out["collectives_lost"] = max(0, int(round(expected)) - out["collectives_read"])
        out["collectives_lost_share"] = round(out["collectives_lost"] / expected, 4)
    if out.get("peer_steps") and out["peer_steps"] > out["steps_read"]:
        out["steps_lost"] = int(out["peer_steps"] - out["steps_read"])
    return out


def kernel_ops(con: duckdb.DuckDBPyConnection, files: dict[int, Path]) -> tuple[pd.DataFrame, list[Skip]]:
    """Kernel time by op type from every rank's kernel_details.csv (DuckDB read_csv, one query)."""
    skips: list[Skip] = []
    if not files:
        return pd.DataFrame(columns=["rank", "op", "count", "total_us"]), skips
    con.execute("CREATE OR REPLACE TEMP TABLE kd_files (rank INTEGER, path VARCHAR)")
    con.executemany("INSERT INTO kd_files VALUES (?, ?)", [[r, str(p)] for r, p in files.items()])
    sql = """SELECT f.rank, k."Type" AS op, count(*) AS count, sum(TRY_CAST(k."Duration(us)" AS DOUBLE)) AS total_us
             FROM read_csv($files, header=true, filename=true, all_varchar=true) k
             JOIN kd_files f ON f.path = k.filename GROUP BY 1, 2"""
    try:
        return con.execute(sql, {"files": [str(p) for p in files.values()]}).df(), skips
    except duckdb.Error:
        pass  # e.g. ranks with different column sets (profiler levels): read them one by one
    frames = []
    for r, p in files.items():
        try:
            frames.append(con.execute(sql, {"files": [str(p)]}).df())
        except duckdb.Error as exc:
            skips.append(Skip(str(p), f"format not known: DuckDB could not read it ({str(exc).splitlines()[0][:160]})", r))
    cols = ["rank", "op", "count", "total_us"]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)), skips


def cpu_type_ops(con: duckdb.DuckDBPyConnection, files: dict[int, Path]) -> tuple[pd.DataFrame, list[Skip]]:
    """Op time by type from FRAMEWORK/cpu_op_type_info_<rank>.csv (CPU profiles; ms → µs)."""
    frames, skips = [], []
    for r, p in files.items():
        try:
            frames.append(con.execute(
                "SELECT $r AS rank, op_type AS op, TRY_CAST(type_occurrences AS BIGINT) AS count, "
                "TRY_CAST(total_compute_time AS DOUBLE) * 1000 AS total_us "
                "FROM read_csv($p, header=true, all_varchar=true)", {"r": r, "p": str(p)}).df())  # fmt: skip
        except duckdb.Error as exc:
            skips.append(Skip(str(p), f"format not known: DuckDB could not read it ({str(exc).splitlines()[0][:160]})", r))
    cols = ["rank", "op", "count", "total_us"]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)), skips


def dataset_rows(con: duckdb.DuckDBPyConnection, files: dict[int, Path]) -> tuple[list[dict[str, Any]], list[Skip]]:
    """dataset.csv: per rank and dataset stage, occurrences and mean time (µs)."""
    rows, skips = [], []
    for r, p in sorted(files.items()):
        try:
            df = con.execute('SELECT "Operation", "Stage", TRY_CAST("Occurrences" AS BIGINT) AS n, '
                             'TRY_CAST("Avg. time (us)" AS DOUBLE) AS avg_us FROM read_csv($p, header=true, all_varchar=true)',
                             {"p": str(p)}).fetchall()  # fmt: skip
        except duckdb.Error as exc:
            skips.append(Skip(str(p), f"format not known: DuckDB could not read it ({str(exc).splitlines()[0][:160]})", r))
            continue
        rows += [{"rank": r, "operation": op, "stage": st, "occurrences": n, "avg_us": avg} for op, st, n, avg in df]
    return rows, skips


def read_small_csv(con: duckdb.DuckDBPyConnection, path: Path) -> pd.DataFrame:
    return con.execute("SELECT * FROM read_csv($p, header=true, all_varchar=true)", {"p": str(path)}).df()


# -- merged Chrome trace ------------------------------------------------------------------------


def merge_traces(con: duckdb.DuckDBPyConnection, traces: list[TraceFile], out: Path) -> int:
    """Write one Chrome-trace/Perfetto JSON array, every rank a process group (streamed by DuckDB COPY).

    pids become ``rank * 1_000_000 + pid`` and process names get a ``rank N:`` prefix so the viewer
    shows the ranks side by side. Returns the number of events written.
    """
    cols = ("{'name': 'VARCHAR', 'ph': 'VARCHAR', 'pid': 'VARCHAR', 'tid': 'VARCHAR', 'ts': 'VARCHAR', "
            "'dur': 'VARCHAR', 'cat': 'VARCHAR', 'id': 'VARCHAR', 'bp': 'VARCHAR', 'args': 'JSON'}")  # fmt: skip
    con.execute("CREATE OR REPLACE TEMP TABLE trace_files (rank INTEGER, path VARCHAR)")
    con.executemany("INSERT INTO trace_files VALUES (?, ?)", [[t.rank, str(t.path)] for t in traces])
    tmp = out.with_name(out.name + ".part")
    sql = f"""
      COPY (
        SELECT e.name, e.ph,
          f.rank * 1000000 + coalesce(TRY_CAST(e.pid AS BIGINT) % 1000000, hash(e.pid) % 1000000) AS pid,
          coalesce(TRY_CAST(e.tid AS BIGINT), hash(e.tid) % 1000000) AS tid,
          coalesce(TRY_CAST(e.ts AS DOUBLE), 0) AS ts, TRY_CAST(e.dur AS DOUBLE) AS dur, e.cat, e.id, e.bp,
          CASE WHEN e.ph='M' AND e.name='process_name'
               THEN json_object('name', 'rank ' || f.rank || ': ' || coalesce(e.args->>'name', ''))
               ELSE e.args END AS args
        FROM read_json($files, format='array', filename=true, columns={cols}, maximum_object_size=16777216) e
        JOIN trace_files f ON f.path = e.filename
      ) TO '{str(tmp).replace("'", "''")}' (FORMAT json, ARRAY true)"""
    con.execute(sql, {"files": [str(t.path) for t in traces]})
    n = con.execute("SELECT count(*) FROM read_json($f, format='array', columns={'ph': 'VARCHAR'})",
                    {"f": str(tmp)}).fetchone()  # fmt: skip
    shutil.move(str(tmp), str(out))
    return int(n[0]) if n else 0


def make_tmpdir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="msdoctor-analyze-")


def frame_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [] if df is None or df.empty else df.to_dict("records")
