"""One profile model between the readers and the facts (HTA's habit: readers → model → analyses).

Every reader (trace_view.json via DuckDB, the CSV readers, communication*.json, SQLite exports)
fills a :class:`ProfileModel` with plain frames and rows; :func:`to_facts` turns the model into the
facts ``profile.*`` through the pure analyses of ``msdoctor.analysis.profile``. Nothing here reads a
file. A part of the model that no reader filled becomes ``Unknown(reason)``, never a zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from msdoctor.analysis import profile as an
from msdoctor.engine.facts import Facts
from msdoctor.facts.profile_files import SCHEMA, Discovery, Skip
from msdoctor.facts.profile_readers import Read

SRC = "profile"


def _empty(cols: list[str]) -> pd.DataFrame:
    return pd.DataFrame(columns=cols)


@dataclass
class ProfileModel:
    """What the readers found, per rank; frames in ms unless a column says ``_us``."""

    discovery: Discovery
    versions: dict[str, Any] = field(default_factory=dict)
    framework: dict[int, str] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: pd.DataFrame = field(default_factory=lambda: _empty(["rank", "step", *an.BREAKDOWN]))
    step_sources: dict[int, str] = field(default_factory=dict)
    no_data_column: dict[int, str] = field(default_factory=dict)  # rank → why its data wait is not measured
    windowed: set[int] = field(default_factory=set)  # ranks whose only "step" is the capture window
    comm_ev: pd.DataFrame = field(default_factory=lambda: _empty(["rank", "step", "name", "type", "start_us", "ms"]))
    comm_json: pd.DataFrame = field(default_factory=pd.DataFrame)
    comm_source: str = ""
    comm_bw: pd.DataFrame = field(default_factory=pd.DataFrame)  # per op and transport: size_mb, time_ms
    matrix: pd.DataFrame = field(default_factory=pd.DataFrame)
    ops: pd.DataFrame = field(default_factory=lambda: _empty(["rank", "op", "count", "total_us"]))
    ops_source: str = ""
    memory: list[dict[str, Any]] = field(default_factory=list)
    operator_memory: list[dict[str, Any]] = field(default_factory=list)
    module_memory: list[dict[str, Any]] = field(default_factory=list)
    static_memory: list[dict[str, Any]] = field(default_factory=list)
    operators: list[dict[str, Any]] = field(default_factory=list)
    dataset: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    read: list[Read] = field(default_factory=list)
    ignored: list[dict[str, Any]] = field(default_factory=list)
    recovered: list[dict[str, Any]] = field(default_factory=list)
    traces: list[Any] = field(default_factory=list)

    @property
    def ranks(self) -> list[int]:
        return [rd.rank for rd in self.discovery.ranks]


def _records(df: pd.DataFrame, cols: list[str], nd: int = 3) -> list[dict[str, Any]]:
    out = []
    for row in df[cols].itertuples(index=False):
        d: dict[str, Any] = {}
        for c, v in zip(cols, row, strict=True):
            if c in ("rank", "step", "steps", "stage"):
                d[c] = int(v)
            elif isinstance(v, float):
                d[c] = None if math.isnan(v) else round(v, 4 if "ratio" in c or c.startswith("z_") else nd)
            else:
                d[c] = v
        out.append(d)
    return out


def _world(m: ProfileModel) -> dict[str, Any]:
    holds = sorted({k for rd in m.discovery.ranks for k in rd.files if k != "profiler_info"})
    return {"ranks": m.ranks, "count": len(m.ranks), "kinds": sorted(set(m.kinds.values())),
            "frameworks": sorted(set(m.framework.values()) - {""}),
            "rank_sources": sorted({rd.rank_source for rd in m.discovery.ranks}), "holds": holds, **m.versions}  # fmt: skip


def to_facts(m: ProfileModel, prefix: str = "profile") -> tuple[Facts, pd.DataFrame]:
    """The facts of one model, and the per-rank summary frame (for callers that render it)."""
    P = prefix
    facts = Facts()
    facts.set(f"{P}.root", str(m.discovery.root), SRC)
    facts.set(f"{P}.world", _world(m), SRC)
    facts.set(f"{P}.files", {"skipped": [s.to_dict() for s in m.skipped], "recovered": m.recovered,
                             "read": [r.to_dict() for r in m.read], "ignored": m.ignored,
                             "schema_version": SCHEMA["version"], "traces_read": len(m.traces)}, SRC)  # fmt: skip
    stage_of = an.stage_map(m.groups, m.ranks)
    steps = m.steps
    summary = an.add_zscores(an.rank_summary(steps), stage_of) if not steps.empty else an.rank_summary(steps)
    _step_facts(facts, P, m, steps, summary, stage_of)
    _comm_facts(facts, P, m)
    if m.ops.empty:
        facts.unknown(f"{P}.top_ops", "no kernel_details.csv, op_statistic.csv or op events in the traces", SRC)
    else:
        facts.set(f"{P}.top_ops", an.top_ops(m.ops), SRC)
    for name, rows, why in (
        ("memory", m.memory, "no readable memory_record.csv (profile_memory=True writes it)"),
        ("operator_memory", m.operator_memory, "no readable operator_memory.csv"),
        ("module_memory", m.module_memory, "no readable npu_module_mem.csv"),
        ("static_memory", m.static_memory, "no readable static_op_mem.csv (graph mode writes it)"),
        ("operators", m.operators, "no readable operator_details.csv"),
        ("dataset", m.dataset, "no readable dataset.csv (written when dataset ops ran with data_process)"),
    ):  # fmt: skip
        if rows:
            facts.set(f"{P}.{name}", rows, SRC)
        else:
            facts.unknown(f"{P}.{name}", why, SRC)
    facts.set(f"{P}.groups", [{"id": k, **v} for k, v in sorted(m.groups.items())], SRC)
    return facts, summary


def _step_facts(facts: Facts, P: str, m: ProfileModel, steps: pd.DataFrame, summary: pd.DataFrame,
                stage_of: dict[int, int]) -> None:  # fmt: skip
    if summary.empty:
        for name in ("ranks", "steps", "stages", "data_gaps"):
            facts.unknown(f"{P}.{name}", "no readable step breakdown (step_trace_time.csv or trace_view.json)", SRC)
        return
    cols = ["rank", "stage", "steps", *an.BREAKDOWN, "comm_ratio", "free_ratio", "data_ratio",
            "z_compute", "z_comm", "z_free", "z_data", "median_compute_ms", "median_comm_ms", "median_free_ms"]  # fmt: skip
    rows = _records(summary, cols)
    for r in rows:
        r["source"] = m.step_sources.get(r["rank"], "")
    facts.set(f"{P}.ranks", rows, SRC)
    facts.set(f"{P}.steps", _records(steps, ["rank", "step", *an.BREAKDOWN]), SRC)
    bubble = steps.groupby("rank")["bubble_ms"].mean().dropna().to_dict() if "bubble_ms" in steps else None
    facts.set(f"{P}.stages", an.stages(summary, m.comm_ev, stage_of, bubble), SRC)
    measurable = steps[~steps["rank"].isin([r for r, src in m.step_sources.items() if src == "trace_view.json" and r in m.windowed])]
    measurable = measurable[measurable["data_ms"].notna()]
    if measurable.empty:
        if m.no_data_column:
            why = "; ".join(f"rank {r}: {w}" for r, w in sorted(m.no_data_column.items())[:3])
            facts.unknown(f"{P}.data_gaps", f"the wait for data is not measured ({why})", SRC)
        else:
            facts.unknown(f"{P}.data_gaps", "no step boundaries (no ProfilerStep# events, as on CPU): gaps before "
                          "steps cannot be measured", SRC)  # fmt: skip
    else:
        facts.set(f"{P}.data_gaps", an.data_gaps(measurable), SRC)


def _comm_facts(facts: Facts, P: str, m: ProfileModel) -> None:
    if m.comm_ev.empty:
        for name in ("comm_ops", "comm_step_totals"):
            facts.unknown(f"{P}.{name}", "no communication ops in any trace, communication.json or kernel_details.csv", SRC)
    else:
        facts.set(f"{P}.comm_ops", an.comm_by_type(m.comm_ev), SRC)
        facts.set(f"{P}.comm_step_totals", an.comm_step_totals(m.comm_ev), SRC)
    if m.comm_json.empty:
        facts.unknown(f"{P}.comm_groups", "no readable communication.json", SRC)
        facts.unknown(f"{P}.comm_wait", "no readable communication.json", SRC)
    else:
        facts.set(f"{P}.comm_groups", an.comm_by_group(m.comm_json, m.groups), SRC)
        facts.set(f"{P}.comm_wait", an.comm_wait(m.comm_json), SRC)
    if m.comm_bw.empty:
        facts.unknown(f"{P}.packets", "no bandwidth info in communication.json", SRC)
    else:
        facts.set(f"{P}.packets", an.packets(m.comm_bw), SRC)
    if m.matrix.empty:
        facts.unknown(f"{P}.links", "no readable communication_matrix.json", SRC)
    else:
        rows = an.links(m.matrix, m.groups)
        inside = [x for x in rows if x["src"] is not None and x["dst"] is not None]
        # as msprof-analyze: a link whose other end is a rank outside this capture cannot be placed
        facts.set(f"{P}.links", inside, SRC)
        facts.set(f"{P}.links_outside", {"count": len(rows) - len(inside), "size_mb": round(sum(
            x["size_mb"] for x in rows if x not in inside), 3)}, SRC)  # fmt: skip


def rank_kind(files: dict[str, Path], trace_processes: set[str]) -> str:
    """ascend when the rank has device data (profiler_info, device CSVs, Ascend Hardware events), else cpu."""
    device_files = {"profiler_info", "kernel_details", "op_statistic", "communication", "communication_matrix",
                    "npu_module_mem", "static_op_mem", "operator_memory", "step_trace_time"}  # fmt: skip
    if device_files & set(files) or SCHEMA["files"]["trace_view"]["hardware_process"] in trace_processes:
        return "ascend"
    return "cpu"
