"""The profile collector: a profiling tree → facts ``profile.*`` for the PERF/COMM/DATA/PAR rules.

Readers → one model → facts: discovery (``profile_files``) finds the rank folders; each reader
(``profile_trace`` DuckDB scans of the big traces, ``profile_readers`` CSVs, ``profile_comm`` JSON,
``profile_sqlite`` exports) fills its part of a ``ProfileModel``; ``profile_model.to_facts`` runs the
pure analyses of ``msdoctor.analysis.profile`` over the model. The collector never judges and never raises
for bad input: what is readable is used, the rest is listed in ``profile.files.skipped`` (rule
PERF306) and an analysis that has no input becomes ``Unknown(reason)``.

Where the per-step breakdown comes from, per rank, in order: ``step_trace_time.csv`` (MindSpore's
own computation from the Overlap Analysis), the trace's Overlap Analysis events, the CPU ops of a
CPU trace (interval unions; one window, step 0, since CPU traces have no ProfilerStep events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from msdoctor.analysis import profile as an
from msdoctor.engine.facts import Facts
from msdoctor.facts import profile_readers as rdr
from msdoctor.facts import profile_sqlite as sq
from msdoctor.facts import profile_trace as pt
from msdoctor.facts.profile_comm import comm_rows, matrix_rows
from msdoctor.facts.profile_files import (
    Discovery,
    Skip,
    check_csv,
    discover,
    double_hash,
    parallel_groups,
    rank_info,
)
from msdoctor.facts.profile_model import ProfileModel, rank_kind, to_facts
from msdoctor.facts.profile_readers import Read

SRC = "profile"


@dataclass
class ProfileData:
    """Everything the command renders besides the findings (frames stay out of the facts)."""

    discovery: Discovery
    facts: Facts
    steps: pd.DataFrame
    ranks: pd.DataFrame
    skipped: list[Skip] = field(default_factory=list)
    recovered: list[dict[str, Any]] = field(default_factory=list)
    traces: list[pt.TraceFile] = field(default_factory=list)
    model: ProfileModel | None = None


def collect(root: Path, *, tmpdir: Path, memory_limit: str = "700MB", threads: int | None = None,
            prefix: str = "profile") -> ProfileData:  # fmt: skip
    """Read a whole tree: discovery → readers → one ProfileModel → facts. Raises InputError only when
    no rank folder exists at all, or when the folder holds several separate captures."""
    m = ProfileModel(discover(root))
    m.skipped = list(m.discovery.skipped)
    m.ignored = list(m.discovery.ignored)
    con = pt.connect(memory_limit, threads)
    try:
        read_metadata(m)
        read_traces(m, con, tmpdir)
        read_step_breakdown(m, con)
        read_communication(m)
        read_operators(m, con)
        read_memory_and_more(m, con)
        read_sqlite_exports(m)
        losses_touch(m)
    finally:
        con.close()
    facts, summary = to_facts(m, prefix)
    return ProfileData(m.discovery, facts, m.steps, summary, m.skipped, m.recovered, m.traces, m)


# -- readers: each fills its part of the model ----------------------------------------------------


def read_sqlite_exports(m: ProfileModel) -> None:
    """analysis.db and ascend_{pytorch,mindspore}_profiler*.db: each fills what a rank's CSV/JSON files did not."""
    steps, comm, matrix, ops, comm_ev = [], [], [], [], []
    have_comm = set(m.comm_json["rank"]) if not m.comm_json.empty else set()
    have_matrix = set(m.matrix["rank"]) if not m.matrix.empty else set()
    have_ops = set(m.ops["rank"]) if not m.ops.empty else set()
    have_ev = set(m.comm_ev["rank"]) if not m.comm_ev.empty else set()
    for rd in m.discovery.ranks:
        if "analysis_db" in rd.files:
            got, rec, skip = sq.read_analysis_db(rd.files["analysis_db"], rd.rank)
            if skip:
                m.skipped.append(skip)
            else:
                m.read.append(rec)
                if rd.rank not in m.step_sources and got["steps"]:
                    steps += got["steps"]
                    m.step_sources[rd.rank] = "analysis.db"
                    if all(s["data_ms"] != s["data_ms"] for s in got["steps"]):  # NaN: no preparing column
                        m.no_data_column[rd.rank] = "analysis.db StepTraceTime has no preparing values"
                comm += got["comm"] if rd.rank not in have_comm else []
                matrix += got["matrix"] if rd.rank not in have_matrix else []
        if "profiler_db" in rd.files:
            got, rec, skip = sq.read_profiler_db(rd.files["profiler_db"], rd.rank)
            if skip:
                m.skipped.append(skip)
            else:
                m.read.append(rec)
                ops += got["ops"] if rd.rank not in have_ops else []
                comm_ev += got["comm"] if rd.rank not in have_ev else []
    if steps:
        m.steps = pd.concat([m.steps, pd.DataFrame(steps)], ignore_index=True) if not m.steps.empty else pd.DataFrame(steps)
    if comm:
        m.comm_json = pd.concat([m.comm_json, pd.DataFrame(comm)], ignore_index=True)
    if matrix:
        m.matrix = pd.concat([m.matrix, pd.DataFrame(matrix)], ignore_index=True)
    if ops:
        m.ops = pd.concat([m.ops, pd.DataFrame(ops)], ignore_index=True) if not m.ops.empty else pd.DataFrame(ops)
    if comm and m.comm_ev.empty:
        # CommAnalyzerTime is communication.json's table: it comes before COMMUNICATION_OP, as the JSON
        # comes before kernel_details' HCCL rows on a text export
        cj = pd.DataFrame(comm)
        m.comm_ev = pd.DataFrame({"rank": cj["rank"], "step": cj["step"], "name": cj["op"], "type": cj["type"],
                                  "start_us": cj["start_us"], "ms": cj["elapse_ms"]})  # fmt: skip
        m.comm_source = "analysis.db"
    elif comm_ev:
        m.comm_ev = pd.concat([m.comm_ev, pd.DataFrame(comm_ev)], ignore_index=True) if not m.comm_ev.empty else pd.DataFrame(comm_ev)
        m.comm_source = m.comm_source or "ascend_*_profiler.db"


def losses_touch(m: ProfileModel) -> None:
    """Name the analyses a truncated trace feeds: those whose source for that rank is the trace."""
    for r in m.recovered:
        rank, touched = r["rank"], []
        if m.step_sources.get(rank) == "trace_view.json":
            touched.append("per-step breakdown (profile.ranks: PERF301/302/303, DATA301)")
        if m.comm_source == "trace_view.json" and r.get("collectives_lost"):
            touched.append("communication ops (profile.comm_ops: COMM302)")
        kd = any(rd.rank == rank and {"kernel_details", "op_statistic"} & set(rd.files) for rd in m.discovery.ranks)
        if not kd:
            touched.append("operators (profile.top_ops: PERF304)")
        r["analyses_touched"] = touched


def read_metadata(m: ProfileModel) -> None:
    """Versions, framework, parallel groups (group id = double_hash(comm name))."""
    for rd in m.discovery.ranks:
        m.framework[rd.rank] = rd.framework
        if "profiler_info" in rd.files:
            info, skip = rank_info(rd.files["profiler_info"], rd.rank)
            if skip:
                m.skipped.append(skip)
            for k in ("ms_version", "cann_version", "torch_npu_level"):
                if info.get(k) is not None:
                    m.versions.setdefault(k, info.get(k))
            if info.get("framework"):
                m.framework[rd.rank] = info["framework"]
        if "profiler_metadata" in rd.files:
            g, skip = parallel_groups(rd.files["profiler_metadata"], rd.rank)
            if skip:
                m.skipped.append(skip)
            for name, v in g.items():
                m.groups[str(double_hash(name))] = {"comm_name": name, **v}


def read_traces(m: ProfileModel, con: pt.duckdb.DuckDBPyConnection, tmpdir: Path) -> None:
    """Every rank's trace_view.json in one DuckDB scan (truncated ones recovered, losses accounted)."""
    kd_ranks = {rd.rank for rd in m.discovery.ranks if "kernel_details" in rd.files}
    for rd in m.discovery.ranks:
        if "trace_view" not in rd.files:
            continue
        tf, skip = pt.prepare_trace(rd.rank, rd.files["trace_view"], tmpdir)
        if skip:
            m.skipped.append(skip)
        if tf is not None:
            m.traces.append(tf)
    m.skipped.extend(pt.load_traces(con, m.traces, drop_kernels=kd_ranks))
    n_events = dict(con.execute("SELECT rank, count(*) FROM ev GROUP BY 1").fetchall())
    for tf in m.traces:
        if tf.rank in n_events:
            m.read.append(Read(str(tf.original), "trace_view", tf.rank, rows=int(n_events[tf.rank])))
    procs = pt.processes(con)
    by_rank: dict[int, set[str]] = {}
    for r, name in zip(procs["rank"], procs["process"], strict=True):
        by_rank.setdefault(int(r), set()).add(str(name))
    for rd in m.discovery.ranks:
        m.kinds[rd.rank] = rank_kind(rd.files, by_rank.get(rd.rank, set()))
    step_windows = pt.build_steps(con)
    if not step_windows.empty:
        m.windowed = set(step_windows.loc[step_windows["marked"] == 0, "rank"].astype(int))
    m.comm_ev = an.comm_events_frame(pt.comm_events(con))
    m.comm_source = "" if m.comm_ev.empty else "trace_view.json"
    ov, cpu = pt.overlap_breakdown(con), pt.cpu_breakdown(con)
    both = [d for d in (ov, cpu) if not d.empty]
    trace_steps = an.steps_from_overlap(pd.concat(both) if both else ov)
    m.steps = trace_steps.drop_duplicates(["rank", "step"])  # Overlap Analysis wins over CPU ops
    for tf in m.traces:
        if tf.dropped_bytes:
            m.recovered.append(pt.loss_report(con, tf, m.discovery.ranks))


def read_step_breakdown(m: ProfileModel, con: pt.duckdb.DuckDBPyConnection) -> None:
    """step_trace_time.csv first (the profiler's own overlap computation), the trace's next."""
    frames, sources = [], {}
    trace_steps = m.steps
    for rd in m.discovery.ranks:
        p = rd.files.get("step_trace_time")
        if p is not None:
            skip = check_csv(p, "step_trace_time", rd.rank)
            f = None
            if skip is None:
                try:
                    raw = pt.read_small_csv(con, p)
                    f = an.steps_from_step_trace(rd.rank, raw)
                except (pt.duckdb.Error, KeyError, ValueError) as exc:
                    skip = Skip(str(p), f"format not known: {exc}", rd.rank)
            if skip is None and f is not None and not f.empty:
                frames.append(f)
                sources[rd.rank] = "step_trace_time.csv"
                m.read.append(Read(str(p), "step_trace_time", rd.rank, rows=len(f)))
                if "Preparing" not in raw.columns:
                    m.no_data_column[rd.rank] = "step_trace_time.csv has no Preparing column"
                continue
            if skip:
                m.skipped.append(skip)
        t = trace_steps[trace_steps["rank"] == rd.rank]
        if not t.empty:
            frames.append(t)
            sources[rd.rank] = "trace_view.json"
    m.steps = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["rank", "step", *an.BREAKDOWN])
    m.step_sources = sources


def read_communication(m: ProfileModel) -> None:
    """communication.json / communication_matrix.json (both layouts)."""
    comm_ops, matrix, bws = [], [], []
    for rd in m.discovery.ranks:
        if "communication" in rd.files:
            o, b, skip = comm_rows(rd.files["communication"], rd.rank)
            comm_ops += o
            bws += b
            if skip and skip.reason != "no communication ops recorded":
                m.skipped.append(skip)
            elif not skip:
                m.read.append(Read(str(rd.files["communication"]), "communication", rd.rank, rows=len(o)))
        if "communication_matrix" in rd.files:
            rows, skip = matrix_rows(rd.files["communication_matrix"], rd.rank)
            matrix += rows
            if skip:
                m.skipped.append(skip)
            else:
                m.read.append(Read(str(rd.files["communication_matrix"]), "communication_matrix", rd.rank, rows=len(rows)))
    m.comm_json = pd.DataFrame(comm_ops)
    m.comm_bw = pd.DataFrame(bws)
    m.matrix = pd.DataFrame(matrix)
    if m.comm_ev.empty and not m.comm_json.empty:
        # no comm events in the traces (unreadable / not exported): use communication.json's ops
        cj = m.comm_json
        m.comm_ev = pd.DataFrame({"rank": cj["rank"], "step": cj["step"], "name": cj["op"], "type": cj["type"],
                                  "start_us": cj["start_us"], "ms": cj["elapse_ms"]})  # fmt: skip
        m.comm_source = "communication.json"


def read_operators(m: ProfileModel, con: pt.duckdb.DuckDBPyConnection) -> None:
    """Compute operators: kernel_details.csv (HCCL rows go to communication), else op_statistic.csv,
    else cpu_op_type_info (CPU), else the trace's device kernels / CPU ops."""
    frames: list[pd.DataFrame] = []
    hccl: list[dict[str, Any]] = []
    covered: set[int] = set()
    for rd in m.discovery.ranks:
        p = rd.files.get("kernel_details")
        if p is None:
            continue
        ops, comm, rec, skip = rdr.kernel_rows(p, rd.rank)
        if skip:
            m.skipped.append(skip)
            continue
        m.read.append(rec)
        covered.add(rd.rank)
        frames.append(pd.DataFrame(ops, columns=["rank", "op", "count", "total_us"]))
        hccl += comm
    for rd in m.discovery.ranks:
        p = rd.files.get("op_statistic")
        if p is None:
            continue
        rows, rec, skip = rdr.op_statistic_rows(p, rd.rank)
        if skip:
            m.skipped.append(skip)
            continue
        m.read.append(rec)
        if rd.rank not in covered:  # kernel_details has the same kernels, per call
            covered.add(rd.rank)
            frames.append(pd.DataFrame(rows, columns=["rank", "op", "core", "count", "total_us"]).drop(columns="core"))
    cpu_files: dict[int, Path] = {}
    for rd in m.discovery.ranks:
        p = rd.files.get("cpu_op_type_info")
        if p is not None and rd.rank not in covered:
            skip = check_csv(p, "cpu_op_type_info", rd.rank)
            if skip:
                m.skipped.append(skip)
            else:
                cpu_files[rd.rank] = p
    cops, cskips = pt.cpu_type_ops(con, cpu_files)
    m.skipped.extend(cskips)
    frames.append(cops)
    frames.append(pt.trace_ops(con, covered | set(cpu_files)))
    frames = [f for f in frames if not f.empty]
    if frames:
        m.ops = pd.concat(frames, ignore_index=True)
    if hccl and m.comm_ev.empty:
        h = pd.DataFrame(hccl)
        m.comm_ev = pd.DataFrame({"rank": h["rank"], "step": h["step"], "name": h["name"],
                                  "type": [an.op_type(n) for n in h["name"]], "start_us": h["start_us"], "ms": h["ms"]})  # fmt: skip
        m.comm_source = "kernel_details.csv (HCCL tasks)"


def read_memory_and_more(m: ProfileModel, con: pt.duckdb.DuckDBPyConnection) -> None:
    """memory_record (per component), operator_memory, npu_module_mem, static_op_mem, operator_details, dataset."""
    readers: dict[str, Any] = {
        "memory_record": (rdr.memory_components, m.memory, True),
        "operator_memory": (rdr.operator_memory, m.operator_memory, False),
        "npu_module_mem": (rdr.module_memory, m.module_memory, True),
        "static_op_mem": (rdr.static_memory, m.static_memory, False),
        "operator_details": (rdr.operator_details, m.operators, False),
    }
    for rd in m.discovery.ranks:
        for key, (fn, out, many) in readers.items():
            p = rd.files.get(key)
            if p is None:
                continue
            val, rec, skip = fn(p, rd.rank)
            if skip:
                m.skipped.append(skip)
                continue
            m.read.append(rec)
            if many:
                out.extend(val)
            elif val is not None:
                out.append(val)
    ds = {rd.rank: rd.files["dataset"] for rd in m.discovery.ranks if "dataset" in rd.files}
    ok = {}
    for r, p in ds.items():
        skip = check_csv(p, "dataset", r)
        if skip:
            m.skipped.append(skip)
        else:
            ok[r] = p
    m.dataset, dskips = pt.dataset_rows(con, ok)
    m.skipped += dskips


def add_baseline(facts: Facts, base: Facts) -> None:
    """``profile.compare``: this run against ``--baseline`` (both collected the same way)."""
    cur_r, base_r = facts.get_known("profile.ranks"), base.get_known("profile.ranks")
    if not cur_r or not base_r:
        facts.unknown("profile.compare", "no step breakdown in " + ("the baseline" if cur_r else "this run"), SRC)
        return
    facts.set("profile.compare", an.compare(cur_r, base_r, facts.get_known("profile.top_ops", []),
                                            base.get_known("profile.top_ops", [])), SRC)  # fmt: skip
