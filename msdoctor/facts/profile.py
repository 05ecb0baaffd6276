"""The profile collector: a profiling tree → facts ``profile.*`` for the PERF/COMM/DATA/PAR rules.

Discovery and small files: ``profile_files``/``profile_comm``; big files: ``profile_trace``
(DuckDB); aggregation: ``msdoctor.analysis.profile``. The collector never judges and never raises
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
from msdoctor.facts import profile_trace as pt
from msdoctor.facts.profile_comm import comm_rows, matrix_rows
from msdoctor.facts.profile_files import (
    SCHEMA,
    Discovery,
    Skip,
    check_csv,
    discover,
    double_hash,
    parallel_groups,
    rank_info,
)

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


def _records(df: pd.DataFrame, cols: list[str], nd: int = 3) -> list[dict[str, Any]]:
    out = []
    for row in df[cols].itertuples(index=False):
        d: dict[str, Any] = {}
        for c, v in zip(cols, row, strict=True):
            if c in ("rank", "step", "steps", "stage"):
                d[c] = int(v)
            elif isinstance(v, float):
                d[c] = round(v, 4 if "ratio" in c or c.startswith("z_") else nd)
            else:
                d[c] = v
        out.append(d)
    return out


def collect(root: Path, *, tmpdir: Path, memory_limit: str = "700MB", threads: int | None = None,
            prefix: str = "profile") -> ProfileData:  # fmt: skip
    """Read a whole tree. Raises InputError only when no rank folder exists at all."""
    disc = discover(root)
    facts = Facts()
    skipped = list(disc.skipped)
    con = pt.connect(memory_limit, threads)
    ranks = [rd.rank for rd in disc.ranks]

    # -- metadata: versions, parallel groups (group id = double_hash(comm name)) -------------
    versions: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for rd in disc.ranks:
        if "profiler_info" in rd.files:
            info, skip = rank_info(rd.files["profiler_info"], rd.rank)
            if skip:
                skipped.append(skip)
            versions.setdefault("ms_version", info.get("ms_version"))
            versions.setdefault("cann_version", info.get("cann_version"))
        if "profiler_metadata" in rd.files:
            g, skip = parallel_groups(rd.files["profiler_metadata"], rd.rank)
            if skip:
                skipped.append(skip)
            for name, v in g.items():
                groups[str(double_hash(name))] = {"comm_name": name, **v}
    stage_of = an.stage_map(groups, ranks)

    # -- operators: kernel_details.csv, else op time from the traces ----------------------------
    kd_files: dict[int, Path] = {}
    for rd in disc.ranks:
        p = rd.files.get("kernel_details")
        if p is not None:
            skip = check_csv(p, "kernel_details", rd.rank)
            if skip:
                skipped.append(skip)
            else:
                kd_files[rd.rank] = p
    cpu_files: dict[int, Path] = {}
    for rd in disc.ranks:
        p = rd.files.get("cpu_op_type_info")
        if p is not None and rd.rank not in kd_files:
            skip = check_csv(p, "cpu_op_type_info", rd.rank)
            if skip:
                skipped.append(skip)
            else:
                cpu_files[rd.rank] = p

    # -- traces: one DuckDB scan over every rank ------------------------------------------------
    traces: list[pt.TraceFile] = []
    recovered: list[dict[str, Any]] = []
    for rd in disc.ranks:
        if "trace_view" not in rd.files:
            continue
        tf, skip = pt.prepare_trace(rd.rank, rd.files["trace_view"], tmpdir)
        if skip:
            skipped.append(skip)
        if tf is not None:
            traces.append(tf)
            if tf.dropped_bytes:
                recovered.append({"rank": rd.rank, "path": str(tf.original), "dropped_bytes": tf.dropped_bytes})
    skipped.extend(pt.load_traces(con, traces, drop_kernels=set(kd_files)))
    step_windows = pt.build_steps(con)
    # ranks whose "step" is the whole capture (no ProfilerStep# events, e.g. CPU): no gap before a step
    windowed = set(step_windows.loc[step_windows["marked"] == 0, "rank"].astype(int)) if not step_windows.empty else set()
    ov = pt.overlap_breakdown(con)
    cpu = pt.cpu_breakdown(con)
    trace_steps = an.steps_from_overlap(pd.concat([d for d in (ov, cpu) if not d.empty]) if not (ov.empty and cpu.empty) else ov)
    trace_steps = trace_steps.drop_duplicates(["rank", "step"])  # Overlap Analysis wins over CPU ops
    comm_ev = an.comm_events_frame(pt.comm_events(con))

    # -- per-step breakdown: step_trace_time.csv first, the trace next ----------------------------
    frames, sources = [], {}
    for rd in disc.ranks:
        p = rd.files.get("step_trace_time")
        if p is not None:
            skip = check_csv(p, "step_trace_time", rd.rank)
            if skip is None:
                try:
                    f = an.steps_from_step_trace(rd.rank, pt.read_small_csv(con, p))
                except (pt.duckdb.Error, KeyError, ValueError) as exc:
                    skip = Skip(str(p), f"format not known: {exc}", rd.rank)
            if skip is None and not f.empty:
                frames.append(f)
                sources[rd.rank] = "step_trace_time.csv"
                continue
            if skip:
                skipped.append(skip)
        t = trace_steps[trace_steps["rank"] == rd.rank]
        if not t.empty:
            frames.append(t)
            sources[rd.rank] = "trace_view.json"
    steps = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["rank", "step", *an.BREAKDOWN])
    summary = an.add_zscores(an.rank_summary(steps), stage_of) if not steps.empty else an.rank_summary(steps)

    # -- communication.json / communication_matrix.json -------------------------------------------
    comm_ops, comm_bw, matrix = [], [], []
    for rd in disc.ranks:
        if "communication" in rd.files:
            o, b, skip = comm_rows(rd.files["communication"], rd.rank)
            comm_ops += o
            comm_bw += b
            if skip and skip.reason != "no communication ops recorded":
                skipped.append(skip)
        if "communication_matrix" in rd.files:
            m, skip = matrix_rows(rd.files["communication_matrix"], rd.rank)
            matrix += m
            if skip:
                skipped.append(skip)
    comm_json = pd.DataFrame(comm_ops)
    if comm_ev.empty and not comm_json.empty:
        # no comm events in the traces (unreadable / not exported): use communication.json's ops
        comm_ev = pd.DataFrame({"rank": comm_json["rank"], "step": comm_json["step"], "name": comm_json["op"],
                                "type": comm_json["type"], "start_us": comm_json["start_us"], "ms": comm_json["elapse_ms"]})  # fmt: skip

    # -- operators: kernel_details.csv / cpu_op_type_info, else op time from the traces ---------
    kops, kskips = pt.kernel_ops(con, kd_files)
    skipped.extend(kskips)
    cops, cskips = pt.cpu_type_ops(con, cpu_files)
    skipped.extend(cskips)
    kops = pd.concat([d for d in (kops, cops) if not d.empty], ignore_index=True) if not (kops.empty and cops.empty) else kops
    tops = pt.trace_ops(con, set(kd_files) | set(cpu_files))
    ops = pd.concat([d for d in (kops, tops) if not d.empty], ignore_index=True) if not (kops.empty and tops.empty) else kops
    small: dict[str, dict[int, Path]] = {"memory_record": {}, "dataset": {}}
    for rd in disc.ranks:
        for key, found in small.items():
            p = rd.files.get(key)
            if p is not None:
                skip = check_csv(p, key, rd.rank)
                if skip:
                    skipped.append(skip)
                else:
                    found[rd.rank] = p
    memory, mskips = pt.memory_peaks(con, small["memory_record"])
    dataset, dskips = pt.dataset_rows(con, small["dataset"])
    skipped += mskips + dskips
    con.close()

    # -- facts -----------------------------------------------------------------------------------
    P = prefix
    facts.set(f"{P}.root", str(root), SRC)
    facts.set(f"{P}.world", {"ranks": ranks, "count": len(ranks), "kinds": sorted({rd.kind for rd in disc.ranks}),
                             "rank_sources": sorted({rd.rank_source for rd in disc.ranks}), **versions}, SRC)  # fmt: skip
    facts.set(f"{P}.files", {"skipped": [s.to_dict() for s in skipped], "recovered": recovered,
                             "schema_version": SCHEMA["version"], "traces_read": len(traces)}, SRC)  # fmt: skip
    if summary.empty:
        for name in ("ranks", "steps", "stages", "data_gaps"):
            facts.unknown(f"{P}.{name}", "no readable step breakdown (step_trace_time.csv or trace_view.json)", SRC)
    else:
        cols = ["rank", "stage", "steps", *an.BREAKDOWN, "comm_ratio", "free_ratio", "data_ratio",
                "z_compute", "z_comm", "z_free", "z_data", "median_compute_ms", "median_comm_ms", "median_free_ms"]  # fmt: skip
        rows = _records(summary, cols)
        for r in rows:
            r["source"] = sources.get(r["rank"], "")
        facts.set(f"{P}.ranks", rows, SRC)
        facts.set(f"{P}.steps", _records(steps, ["rank", "step", *an.BREAKDOWN]), SRC)
        bubble = steps.groupby("rank")["bubble_ms"].mean().dropna().to_dict() if "bubble_ms" in steps else None
        facts.set(f"{P}.stages", an.stages(summary, comm_ev, stage_of, bubble), SRC)
        measurable = steps[~steps["rank"].isin([r for r, src in sources.items() if src == "trace_view.json" and r in windowed])]
        if measurable.empty:
            facts.unknown(f"{P}.data_gaps", "no step boundaries (no ProfilerStep# events, as on CPU): gaps before "
                          "steps cannot be measured", SRC)  # fmt: skip
        else:
            facts.set(f"{P}.data_gaps", an.data_gaps(measurable), SRC)
    if comm_ev.empty:
        for name in ("comm_ops", "comm_step_totals"):
            facts.unknown(f"{P}.{name}", "no communication ops in any trace or communication.json", SRC)
    else:
        facts.set(f"{P}.comm_ops", an.comm_by_type(comm_ev), SRC)
        facts.set(f"{P}.comm_step_totals", an.comm_step_totals(comm_ev), SRC)
    if comm_json.empty:
        facts.unknown(f"{P}.comm_groups", "no readable communication.json", SRC)
    else:
        facts.set(f"{P}.comm_groups", an.comm_by_group(comm_json, groups), SRC)
    mdf = pd.DataFrame(matrix)
    if mdf.empty:
        facts.unknown(f"{P}.links", "no readable communication_matrix.json", SRC)
    else:
        facts.set(f"{P}.links", an.links(mdf, groups), SRC)
    if ops.empty:
        facts.unknown(f"{P}.top_ops", "no kernel_details.csv and no op events in the traces", SRC)
    else:
        facts.set(f"{P}.top_ops", an.top_ops(ops), SRC)
    if memory:
        facts.set(f"{P}.memory", memory, SRC)
    else:
        facts.unknown(f"{P}.memory", "no readable memory_record.csv (profile_memory=True writes it)", SRC)
    if dataset:
        facts.set(f"{P}.dataset", dataset, SRC)
    else:
        facts.unknown(f"{P}.dataset", "no readable dataset.csv (written when dataset ops ran with data_process)", SRC)
    facts.set(f"{P}.groups", [{"id": k, **v} for k, v in sorted(groups.items())], SRC)
    return ProfileData(disc, facts, steps, summary, skipped, recovered, traces)


def add_baseline(facts: Facts, base: Facts) -> None:
    """``profile.compare``: this run against ``--baseline`` (both collected the same way)."""
    cur_r, base_r = facts.get_known("profile.ranks"), base.get_known("profile.ranks")
    if not cur_r or not base_r:
        facts.unknown("profile.compare", "no step breakdown in " + ("the baseline" if cur_r else "this run"), SRC)
        return
    facts.set("profile.compare", an.compare(cur_r, base_r, facts.get_known("profile.top_ops", []),
                                            base.get_known("profile.top_ops", [])), SRC)  # fmt: skip
