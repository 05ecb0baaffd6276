"""Write the SQLite exports of a profiling tree from its CSV/JSON files, in the documented table layouts.

For every rank folder holding ASCEND_PROFILER_OUTPUT/, writes next to the text files:

- ``analysis.db`` (CANN "Data in analysis.db"): ``StepTraceTime`` from step_trace_time.csv (µs),
  ``CommAnalyzerTime`` from communication.json, ``CommAnalyzerMatrix`` from communication_matrix.json;
- ``ascend_pytorch_profiler_<rank>.db`` ("Data in ascend_pytorch_profiler_{Rank_ID}.db"): ``STRING_IDS``,
  ``TASK`` + ``COMPUTE_TASK_INFO`` from kernel_details.csv (non-HCCL rows), ``COMMUNICATION_OP`` from the
  HCCL rows, ``STEP_TIME`` from the step ids (ns).

With ``--db-only`` the text files are removed afterwards, leaving a tree only the SQLite readers can
read. Usage: ``python samples/profiles/gen_profile_db.py TREE [--db-only]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sqlite3
import sys
from pathlib import Path

STEP_RE = re.compile(r"^step(\d*)$")


def _f(v: str) -> float | None:
    try:
        return float(str(v).strip())
    except ValueError:
        return None


def write_analysis_db(out: Path) -> None:
    db = sqlite3.connect(out / "analysis.db")
    db.execute("CREATE TABLE StepTraceTime (step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, "
               "overlapped NUMERIC, communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, "
               "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC)")  # fmt: skip
    db.execute("CREATE TABLE CommAnalyzerTime (hccl_op_name TEXT, group_name TEXT, start_timestamp NUMERIC, "
               "elapse_time NUMERIC, transit_time NUMERIC, wait_time NUMERIC, synchronization_time NUMERIC, "
               "idle_time NUMERIC, step TEXT, type TEXT)")  # fmt: skip
    db.execute("CREATE TABLE CommAnalyzerMatrix (hccl_op_name TEXT, group_name TEXT, src_rank TEXT, dst_rank TEXT, "
               "transport_type TEXT, transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, step TEXT, "
               "type TEXT, op_name TEXT)")  # fmt: skip
    stt = out / "step_trace_time.csv"
    if stt.is_file():
        with stt.open(newline="") as f:
            for r in csv.DictReader(f):
                db.execute("INSERT INTO StepTraceTime VALUES (?,?,?,?,?,?,?,?,?,?)", [
                    r["Step"], _f(r["Computing"]), _f(r["Communication(Not Overlapped)"]), _f(r["Overlapped"]),
                    _f(r["Communication"]), _f(r["Free"]), _f(r.get("Stage", "")), _f(r.get("Bubble", "")),
                    _f(r.get("Communication(Not Overlapped and Exclude Receive)", "")),
                    _f(r["Preparing"]) if "Preparing" in r else None])  # fmt: skip
    comm = out / "communication.json"
    if comm.is_file():
        for step, kinds in json.loads(comm.read_text()).items():
            for kind, ops in kinds.items():
                for key, info in ops.items():
                    if key.startswith("Total"):
                        continue
                    name, _, group = key.partition("@")
                    t = info["Communication Time Info"]
                    db.execute("INSERT INTO CommAnalyzerTime VALUES (?,?,?,?,?,?,?,?,?,?)", [
                        name, group, t.get("Start Timestamp(us)"), t["Elapse Time(ms)"], t.get("Transit Time(ms)"),
                        t.get("Wait Time(ms)"), t.get("Synchronization Time(ms)"), t.get("Idle Time(ms)"), step,
                        "Collective" if kind == "collective" else "P2P"])  # fmt: skip
    matrix = out / "communication_matrix.json"
    if matrix.is_file():
        for step, kinds in json.loads(matrix.read_text()).items():
            for kind, ops in kinds.items():
                for key, links in ops.items():
                    if "@" not in key:
                        continue  # "Total Op Info" of one rank mixes groups
                    name, _, group = key.partition("@")
                    for link, x in links.items():
                        src, _, dst = link.partition("-")
                        db.execute("INSERT INTO CommAnalyzerMatrix VALUES (?,?,?,?,?,?,?,?,?,?,?)", [
                            name, group, src, dst, x["Transport Type"], x["Transit Size(MB)"], x["Transit Time(ms)"],
                            x.get("Bandwidth(GB/s)"), step, "Collective" if kind == "collective" else "P2P",
                            x.get("op_name", x.get("Op Name", ""))])  # fmt: skip
    db.commit()
    db.close()


def write_profiler_db(out: Path, rank: int) -> None:
    kd = out / "kernel_details.csv"
    db = sqlite3.connect(out / f"ascend_pytorch_profiler_{rank}.db")
    db.execute("CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, "
               "globalTaskId INTEGER PRIMARY KEY, globalPid INTEGER, taskType INTEGER, contextId INTEGER, "
               "streamId INTEGER, taskId INTEGER, modelId INTEGER)")  # fmt: skip
    db.execute("CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER, "
               "mixBlockDim INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, "
               "inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER, outputShapes INTEGER, "
               "attrInfo INTEGER)")  # fmt: skip
    db.execute("CREATE TABLE COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, "
               "groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, dataType INTEGER, "
               "algType INTEGER, count NUMERIC, opType INTEGER)")  # fmt: skip
    db.execute("CREATE TABLE STEP_TIME (id INTEGER PRIMARY KEY, startNs INTEGER, endNs INTEGER)")
    ids: dict[str, int] = {}

    def sid(s: str) -> int:
        if s not in ids:
            ids[s] = len(ids)
            db.execute("INSERT INTO STRING_IDS VALUES (?, ?)", [ids[s], s])
        return ids[s]

    steps: dict[int, list[int]] = {}
    if kd.is_file():
        with kd.open(newline="", encoding="utf-8-sig") as f:
            rows = csv.reader(f)
            head = [h.strip() for h in next(rows)]
            col = {h: i for i, h in enumerate(head)}
            step_col = col.get("Step ID", col.get("Step Id"))
            for n, r in enumerate(rows):
                if len(r) != len(head):
                    continue  # a ragged row: not a task
                start, dur = _f(r[col["Start Time(us)"]]), _f(r[col["Duration(us)"]])
                if start is None or dur is None:
                    continue
                a = round(start * 1000)
                b = a + round(dur * 1000)  # the databases hold ns integers
                step = int(_f(r[step_col]) or 0) if step_col is not None else 0
                lo_hi = steps.setdefault(step, [a, b])
                lo_hi[0], lo_hi[1] = min(lo_hi[0], a), max(lo_hi[1], b)
                name, core = r[col["Name"]].strip(), r[col["Accelerator Core"]].strip()
                if core == "HCCL" or name.startswith("hcom_"):
                    db.execute("INSERT INTO COMMUNICATION_OP (opName, startNs, endNs, opId, opType) VALUES (?,?,?,?,?)",
                               [sid(name), a, b, n, sid(r[col["Type"]].strip())])  # fmt: skip
                    continue
                db.execute("INSERT INTO TASK (startNs, endNs, globalTaskId, taskType) VALUES (?,?,?,?)", [a, b, n, sid(core)])
                db.execute("INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, taskType, opType) VALUES (?,?,?,?)",
                           [sid(name), n, sid(core), sid(r[col["Type"]].strip())])  # fmt: skip
    for s, (a, b) in sorted(steps.items()):
        db.execute("INSERT INTO STEP_TIME VALUES (?, ?, ?)", [s, a, b + 1])
    db.commit()
    db.close()


def convert(tree: Path, db_only: bool = False) -> int:
    n = 0
    for out in sorted(tree.glob("**/ASCEND_PROFILER_OUTPUT")):
        infos = sorted(out.parent.glob("profiler_info_*.json"))
        rank = int(infos[0].stem.rsplit("_", 1)[1]) if infos else n
        write_analysis_db(out)
        write_profiler_db(out, rank)
        if db_only:
            for f in out.iterdir():
                if f.suffix in (".csv", ".json"):
                    f.unlink()
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--db-only", action="store_true", help="remove the CSV/JSON files afterwards")
    args = ap.parse_args(argv)
    n = convert(args.tree, args.db_only)
    print(f"{n} rank folder(s) converted")
    return 0 if n else 2


if __name__ == "__main__":
    sys.exit(main())
