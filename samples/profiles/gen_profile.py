"""Synthesise an N-rank MindSpore Ascend profiling tree with known, injected problems.

The files follow the documented schemas (shared/profiler-formats.md §3): one
``<host>_<pid>_<ts17>_ascend_ms/`` folder per rank with ``profiler_info_<rank>.json``,
``profiler_metadata.json`` and ``ASCEND_PROFILER_OUTPUT/{trace_view.json, step_trace_time.csv,
kernel_details.csv, op_statistic.csv, communication.json, communication_matrix.json}``.

The timeline model is synchronous training, so every rank's step takes the same wall time and a
slow rank shows up as *more compute* on itself and *more waiting* (communication) on the others:

    step = data + max(compute) + allreduce·(1-overlap) + spike + p2p + free
    rank r:  data | compute_r | AllReduce (exposed part + wait for the slowest of its DP group)
             | Receive (wait for the slowest PP stage) + Send | free

``truth.json`` at the root records what was injected, so tests and benchmarks compare the
analysis against it. Usage::

    python samples/profiles/gen_profile.py OUT --ranks 8 --steps 5 --kernels 200 \
        --slow-rank 3 --slow-link 4:5 --pp 2 --stage-imbalance 1:1.4
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

EPOCH_US = 1_764_410_400_000_000  # 2025-11-29 10:00 UTC, in µs (absolute, as Ascend writes)
# (op type, core, weight of compute time) — a transformer-ish mix
OP_MIX = [
    ("MatMul", "AI_CORE", 0.42),
    ("FlashAttentionScore", "MIX_AIC", 0.22),
    ("Add", "AI_VECTOR_CORE", 0.08),
    ("LayerNorm", "AI_VECTOR_CORE", 0.07),
    ("Cast", "AI_VECTOR_CORE", 0.06),
    ("Mul", "AI_VECTOR_CORE", 0.06),
    ("Softmax", "AI_VECTOR_CORE", 0.05),
    ("Transpose", "AI_CORE", 0.04),
]
KERNEL_COLUMNS = (
    "Step ID,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
    "Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
    "Output Shapes,Output Data Types,Output Formats,Context ID"
)
STEP_COLUMNS = (
    "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
    "Communication(Not Overlapped and Exclude Receive),Preparing"
)
PID_MS, PID_HW, PID_HCCL, PID_OVERLAP = 1, 2000, 3000, 4000


@dataclass
class Config:
    ranks: int = 8
    steps: int = 5
    kernels: int = 200  # kernels per step per rank: the size knob
    pp: int = 1  # pipeline stages (contiguous blocks of ranks)
    compute_ms: float = 100.0
    allreduce_ms: float = 40.0  # AllReduce transit per step
    overlap: float = 0.5  # share of the AllReduce hidden under compute
    p2p_ms: float = 2.0
    data_ms: float = 1.0  # gap before the first kernel of a step (data loading)
    free_ms: float = 3.0
    slow_rank: int | None = None
    slow_factor: float = 1.3
    slow_link: tuple[int, int] | None = None  # global src -> dst
    slow_link_gbps: float = 2.0
    link_gbps: float = 18.0
    stage_imbalance: tuple[int, float] | None = None  # (stage, compute factor)
    spike_steps: list[int] = field(default_factory=list)  # steps whose last AllReduce takes +spike_ms
    spike_ms: float = 200.0
    seed: int = 7
    truncate_rank: int | None = None  # cut this rank's trace_view.json mid-event
    hot_op: tuple[str, float] | None = None  # (op type, share of compute) — one dominant operator
    host_prefix: str = "node"


def double_hash(data: str) -> int:
    """The group-id suffix of HCCL op names (msprof-analyze cluster_analyse/common_func/utils.py)."""
    h0 = h1 = 0
    for ch in data:
        h0 = (h0 * 29 + ord(ch)) & 0xFFFFFFFF
        h1 = (h1 * 131 + ord(ch)) & 0xFFFFFFFF
    return (h0 << 32) | h1


def fmt(us: float) -> str:
    return f"{us:.3f}"


class Topology:
    def __init__(self, cfg: Config) -> None:
        if cfg.ranks % cfg.pp:
            raise SystemExit(f"--ranks {cfg.ranks} is not a multiple of --pp {cfg.pp}")
        self.n, self.pp = cfg.ranks, cfg.pp
        self.dp = cfg.ranks // cfg.pp

    def stage(self, r: int) -> int:
        return r // self.dp

    def dp_group(self, r: int) -> list[int]:
        s = self.stage(r)
        return list(range(s * self.dp, (s + 1) * self.dp))

    def pp_group(self, r: int) -> list[int]:
        return [r % self.dp + s * self.dp for s in range(self.pp)]

    def groups(self) -> dict[str, dict[str, Any]]:
        """parallel_group_info: comm name -> {group_name, global_ranks} (group_rank filled per rank)."""
        out: dict[str, dict[str, Any]] = {}
        for s in range(self.pp):
            ranks = self.dp_group(s * self.dp)
            out[f"hccl_dp_{s}"] = {"group_name": f"dp_group_{s}", "global_ranks": ranks}
        if self.pp > 1:
            for k in range(self.dp):
                ranks = self.pp_group(k)
                out[f"hccl_pp_{k}"] = {"group_name": f"pp_group_{k}", "global_ranks": ranks}
        return out


def compute_times(cfg: Config, topo: Topology) -> list[float]:
    out = []
    for r in range(cfg.ranks):
        c = cfg.compute_ms
        if cfg.stage_imbalance and topo.stage(r) == cfg.stage_imbalance[0]:
            c *= cfg.stage_imbalance[1]
        if cfg.slow_rank == r:
            c *= cfg.slow_factor
        out.append(c)
    return out


class RankWriter:
    """Writes one rank's folder; the trace is streamed event by event, never held whole."""

    def __init__(self, cfg: Config, topo: Topology, root: Path, rank: int, compute: list[float]) -> None:
        self.cfg, self.topo, self.rank, self.compute = cfg, topo, rank, compute
        host = f"{cfg.host_prefix}{rank // 8}"
        ts17 = f"20251129100000{rank:03d}"
        self.dir = root / f"{host}_{4000 + rank}_{ts17}_ascend_ms"
        self.out = self.dir / "ASCEND_PROFILER_OUTPUT"
        self.out.mkdir(parents=True, exist_ok=True)
        self.rng = random.Random(cfg.seed * 1000 + rank)
        groups = topo.groups()
        self.dp_comm = f"hccl_dp_{topo.stage(rank)}"
        self.dp_gid = str(double_hash(self.dp_comm))
        self.pp_comm = f"hccl_pp_{rank % topo.dp}" if topo.pp > 1 else None
        self.pp_gid = str(double_hash(self.pp_comm)) if self.pp_comm else None
        meta = {
            "parallel_group_info": {
                name: {**g, "group_rank": g["global_ranks"].index(rank)}
                for name, g in groups.items()
                if rank in g["global_ranks"]
            }
        }
        (self.dir / "profiler_metadata.json").write_text(json.dumps(meta, indent=1))
        info = {
            "profiler_parameters": {"profiler_level": "Level1", "activities": ["CPU", "NPU"], "with_stack": False},
            "ms_profiler_info": {"rank_id": str(rank), "device_id": str(rank % 8)},
            "cann_profiler_info": {},
            "analysis_cost_time": {},
            "ms_version": "2.10.0",
            "cann_version": "8.3.RC1",
            "jit_level": "O0",
        }
        (self.dir / f"profiler_info_{rank}.json").write_text(json.dumps(info, indent=1))

    # -- one step's timeline ---------------------------------------------------------------
    def step_plan(self, s: int, t0: float) -> dict[str, Any]:
        cfg, r = self.cfg, self.rank
        cmax = max(self.compute)
        cmax_g = max(self.compute[i] for i in self.topo.dp_group(r))
        c = self.compute[r]
        us = 1000.0
        hidden = cfg.allreduce_ms * cfg.overlap
        exposed = cfg.allreduce_ms - hidden
        wait_ar = cmax_g - c
        spike = cfg.spike_ms if s in cfg.spike_steps else 0.0
        t_c0 = t0 + cfg.data_ms * us
        t_c1 = t_c0 + c * us
        hccl: list[tuple[str, str, float, float, float]] = []  # (name, kind, start, dur, wait) µs
        # two AllReduce buckets under compute, two after it (the first absorbs the wait)
        h0 = t_c1 - hidden * us
        hccl.append((f"hcom_allReduce__{100 + r}_{s}_1", "ar", h0, hidden / 2 * us, 0.0))
        hccl.append((f"hcom_allReduce__{100 + r}_{s}_2", "ar", h0 + hidden / 2 * us, hidden / 2 * us, 0.0))
        t = t_c1
        d1 = (exposed / 2 + wait_ar) * us
        hccl.append((f"hcom_allReduce__{100 + r}_{s}_3", "ar", t, d1, wait_ar * us))
        t += d1
        d2 = (exposed / 2 + spike) * us
        hccl.append((f"hcom_allReduce__{100 + r}_{s}_4", "ar", t, d2, 0.0))
        t += d2
        bubble = 0.0
        if self.topo.pp > 1:
            wait_pp = cmax - cmax_g
            d = (cfg.p2p_ms / 2 + wait_pp) * us
            hccl.append((f"hcom_receive__{200 + r}_{s}_1", "p2p", t, d, wait_pp * us))
            t += d
            hccl.append((f"hcom_send__{200 + r}_{s}_1", "p2p", t, cfg.p2p_ms / 2 * us, 0.0))
            t += cfg.p2p_ms / 2 * us
            bubble = (cfg.p2p_ms + wait_pp) * us
        t_end = t + cfg.free_ms * us
        return {
            "t0": t0, "t_c0": t_c0, "t_c1": t_c1, "t_comm_end": t, "t_end": t_end, "hccl": hccl,
            "hidden": hidden * us, "bubble": bubble,
        }  # fmt: skip

    def kernels(self, t_c0: float, t_c1: float) -> list[tuple[str, str, str, float, float]]:
        """(name, type, core, start, dur) filling [t_c0, t_c1) back to back."""
        k = max(self.cfg.kernels, len(OP_MIX))
        mix = OP_MIX
        if self.cfg.hot_op:
            hot, share = self.cfg.hot_op
            rest = sum(w for n, _, w in OP_MIX if n != hot)
            mix = [(n, c, share if n == hot else w / rest * (1 - share)) for n, c, w in OP_MIX]
        types = [mix[i % len(mix)] for i in range(k)]
        counts: dict[str, int] = {}
        for name, _, _ in types:
            counts[name] = counts.get(name, 0) + 1
        weights = [w / counts[name] for name, _, w in types]
        jit = [self.rng.uniform(0.8, 1.2) * w for w in weights]
        scale = (t_c1 - t_c0) / sum(jit)
        out, t = [], t_c0
        for i, ((name, core, _), j) in enumerate(zip(types, jit, strict=True)):
            d = j * scale
            out.append((f"{name}-op{i}", name, core, t, d))
            t += d
        return out

    # -- files ------------------------------------------------------------------------------
    def write(self) -> dict[str, Any]:
        cfg = self.cfg
        step_ms = (
            cfg.data_ms + max(self.compute) + cfg.allreduce_ms * (1 - cfg.overlap) + cfg.free_ms
            + (cfg.p2p_ms if self.topo.pp > 1 else 0.0)
        )  # fmt: skip
        tv = (self.out / "trace_view.json").open("w")
        kd = (self.out / "kernel_details.csv").open("w")
        kd.write(KERNEL_COLUMNS + "\n")
        step_rows, comm, matrix = [], {}, {}
        stats: dict[tuple[str, str], list[float]] = {}
        first = [True]

        def ev(obj: str) -> None:
            tv.write(("[\n" if first[0] else ",\n") + obj)
            first[0] = False

        self.meta_events(ev)
        t0 = EPOCH_US + 10_000.0
        task = 0
        for s in range(1, cfg.steps + 1):
            spike = cfg.spike_ms if s in cfg.spike_steps else 0.0
            p = self.step_plan(s, t0)
            t_end = p["t_end"]
            ev(f'{{"name": "ProfilerStep#{s}", "ph": "X", "pid": {PID_MS}, "tid": 1, "ts": "{fmt(t0)}", '
               f'"dur": "{fmt(t_end - t0)}", "args": {{}}}}')  # fmt: skip
            for name, typ, core, st, d in self.kernels(p["t_c0"], p["t_c1"]):
                task += 1
                ev(f'{{"name": "{name}", "pid": {PID_HW}, "tid": 2, "ts": "{fmt(st)}", "dur": "{fmt(d)}", '
                   f'"ph": "X", "args": {{"Model Id": 4294967295, "Task Type": "{core}", "Physic Stream Id": 2, '
                   f'"Task Id": {task}, "Batch Id": 0, "Subtask Id": 4294967295, "connection_id": {task}}}}}')  # fmt: skip
                kd.write(f"{s},4294967295,{task},2,{name},{typ},static,{core},{fmt(st)},{fmt(d)},0.5,24,0,NO,"
                         f'"4096,4096","FLOAT16","ND","4096,4096","FLOAT16","ND",N/A\n')  # fmt: skip
                stats.setdefault((typ, core), []).append(d)
            comm_ms = 0.0
            for name, kind, st, d, _w in p["hccl"]:
                tid = 10 if kind == "ar" else 11
                ev(f'{{"name": "{name}", "pid": {PID_HCCL}, "tid": {tid}, "ts": "{fmt(st)}", "dur": "{fmt(d)}", '
                   f'"ph": "X", "args": {{"connection_id": 0, "model id": 4294967295}}}}')  # fmt: skip
                ev(f'{{"name": "Communication", "pid": {PID_OVERLAP}, "tid": 1, "ts": "{fmt(st)}", '
                   f'"dur": "{fmt(d)}", "ph": "X"}}')  # fmt: skip
                comm_ms += d
            ev(f'{{"name": "Computing", "pid": {PID_OVERLAP}, "tid": 0, "ts": "{fmt(p["t_c0"])}", '
               f'"dur": "{fmt(p["t_c1"] - p["t_c0"])}", "ph": "X"}}')  # fmt: skip
            not_ov = p["t_comm_end"] - p["t_c1"]
            ev(f'{{"name": "Communication(Not Overlapped)", "pid": {PID_OVERLAP}, "tid": 2, '
               f'"ts": "{fmt(p["t_c1"])}", "dur": "{fmt(not_ov)}", "ph": "X"}}')  # fmt: skip
            for fs, fe in ((t0, p["t_c0"]), (p["t_comm_end"], t_end)):
                ev(f'{{"name": "Free", "pid": {PID_OVERLAP}, "tid": 3, "ts": "{fmt(fs)}", '
                   f'"dur": "{fmt(fe - fs)}", "ph": "X"}}')  # fmt: skip
            hccl_start = min(h[2] for h in p["hccl"])
            step_rows.append([
                s, p["t_c1"] - p["t_c0"], not_ov, p["hidden"], comm_ms,
                (p["t_c0"] - t0) + (t_end - p["t_comm_end"]),
                (p["t_comm_end"] - hccl_start) - p["bubble"], p["bubble"], not_ov - p["bubble"], p["t_c0"] - t0,
            ])  # fmt: skip
            comm[f"step{s}"], matrix[f"step{s}"] = self.comm_step(p, spike)
            t0 = t_end + 50.0
        tv.write("\n]\n")
        tv.close()
        kd.close()
        with (self.out / "step_trace_time.csv").open("w") as f:
            f.write(STEP_COLUMNS + "\n")
            for row in step_rows:
                f.write(",".join(str(row[0]) if i == 0 else f"{v:.3f}" for i, v in enumerate(row)) + "\n")
        self.write_op_statistic(stats)
        with (self.out / "memory_record.csv").open("w") as f:
            f.write("Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Device Type\n")
            for i in range(len(step_rows)):
                alloc = 20_000.0 + 500.0 * i + 100.0 * self.rank
                f.write(f"MindSpore,{fmt(EPOCH_US + i * 1000.0)},{alloc:.3f},{alloc + 4096:.3f},{alloc:.3f},NPU:{self.rank % 8}\n")
        with (self.out / "dataset.csv").open("w") as f:
            f.write("Operation,Stage,Occurrences,Avg. time (us),Custom Info\n")
            f.write(f"Pipeline,get_next,{cfg.steps},{cfg.data_ms * 1000:.3f},\n")
            f.write(f"BatchOp,batch,{cfg.steps},{cfg.data_ms * 800:.3f},\n")
        (self.out / "communication.json").write_text(json.dumps(comm, indent=1))
        (self.out / "communication_matrix.json").write_text(json.dumps(matrix, indent=1))
        if cfg.truncate_rank == self.rank:
            self.truncate()
        return {"rank": self.rank, "dir": self.dir.name, "step_ms": step_ms}

    def meta_events(self, ev: Any) -> None:
        names = {PID_MS: "MindSpore", PID_HW: "Ascend Hardware", PID_HCCL: "HCCL", PID_OVERLAP: "Overlap Analysis"}
        for pid, name in names.items():
            ev(f'{{"name": "process_name", "pid": {pid}, "tid": 0, "ph": "M", "args": {{"name": "{name}"}}}}')
            ev(f'{{"name": "process_labels", "pid": {pid}, "tid": 0, "ph": "M", "args": {{"labels": "NPU"}}}}')
        threads = {
            (PID_OVERLAP, 0): "Computing", (PID_OVERLAP, 1): "Communication",
            (PID_OVERLAP, 2): "Communication(Not Overlapped)", (PID_OVERLAP, 3): "Free",
            (PID_HCCL, 10): f"Group {self.dp_gid} Communication", (PID_HCCL, 11): f"Group {self.pp_gid} Communication",
            (PID_HW, 2): "Stream 2", (PID_MS, 1): "Thread 1",
        }  # fmt: skip
        for (pid, tid), name in threads.items():
            ev(f'{{"name": "thread_name", "pid": {pid}, "tid": {tid}, "ph": "M", "args": {{"name": "{name}"}}}}')

    def comm_step(self, p: dict[str, Any], spike: float) -> tuple[dict[str, Any], dict[str, Any]]:
        cfg, r = self.cfg, self.rank
        coll: dict[str, Any] = {}
        p2p: dict[str, Any] = {}
        dp = self.topo.dp_group(r)
        me = dp.index(r)
        nxt = dp[(me + 1) % len(dp)]
        bad = cfg.slow_link is not None and cfg.slow_link == (r, nxt)
        transport, gbps = ("PCIE", cfg.slow_link_gbps) if bad else ("HCCS", cfg.link_gbps)
        ar_size = 0.0
        ar_time = 0.0
        for name, kind, st, d, wait in p["hccl"]:
            elapse = d / 1000.0
            w = wait / 1000.0
            transit = max(elapse - w, 1e-3)
            size = transit * gbps * 0.9  # MB moved by this op at (nearly) link speed
            gid = self.dp_gid if kind == "ar" else self.pp_gid
            info = {
                "Communication Time Info": {
                    "Start Timestamp(us)": round(st, 3), "Elapse Time(ms)": round(elapse, 4),
                    "Transit Time(ms)": round(transit, 4), "Wait Time(ms)": round(w, 4),
                    "Synchronization Time(ms)": round(w, 4), "Idle Time(ms)": 0.0,
                    "Wait Time Ratio": round(w / (w + transit), 4), "Synchronization Time Ratio": round(w / (w + transit), 4),
                },
                "Communication Bandwidth Info": {
                    transport: {
                        "Transit Size(MB)": round(size, 4), "Transit Time(ms)": round(transit, 4),
                        "Bandwidth(GB/s)": round(size / transit, 4), "Large Packet Ratio": 1.0,
                        "Size Distribution": {"4.0": [max(1, int(size / 4)), round(transit, 4)]},
                    }
                },
            }  # fmt: skip
            (coll if kind == "ar" else p2p)[f"{name}@{gid}"] = info
            if kind == "ar":
                ar_size += size
                ar_time += transit
        comm = {"collective": coll, "p2p": p2p}
        link_time = ar_size / gbps
        links = {
            f"{me}-{me}": {"Transport Type": "LOCAL", "Transit Size(MB)": 0.0, "Transit Time(ms)": 0.0,
                           "Bandwidth(GB/s)": 0.0, "op_name": ""},
            f"{me}-{dp.index(nxt)}": {
                "Transport Type": transport, "Transit Size(MB)": round(ar_size, 4),
                "Transit Time(ms)": round(link_time, 4), "Bandwidth(GB/s)": round(ar_size / link_time, 4),
                "op_name": f"hcom_allReduce__{100 + r}_0_1",
            },
        }  # fmt: skip
        matrix: dict[str, Any] = {"collective": {f"allreduce-total@{self.dp_gid}": links}, "p2p": {}}
        if self.topo.pp > 1:
            pp = self.topo.pp_group(r)
            i = pp.index(r)
            if i + 1 < len(pp):
                size = 64.0
                matrix["p2p"][f"send-total@{self.pp_gid}"] = {
                    f"{i}-{i}": {"Transport Type": "LOCAL", "Transit Size(MB)": 0.0, "Transit Time(ms)": 0.0,
                                 "Bandwidth(GB/s)": 0.0, "op_name": ""},
                    f"{i}-{i + 1}": {"Transport Type": "HCCS", "Transit Size(MB)": size,
                                     "Transit Time(ms)": round(size / cfg.link_gbps, 4),
                                     "Bandwidth(GB/s)": cfg.link_gbps, "op_name": f"hcom_send__{200 + r}_0_1"}
                }  # fmt: skip
        return comm, matrix

    def write_op_statistic(self, stats: dict[tuple[str, str], list[float]]) -> None:
        total = sum(sum(v) for v in stats.values())
        with (self.out / "op_statistic.csv").open("w") as f:
            f.write("OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n")
            for (typ, core), v in sorted(stats.items(), key=lambda kv: -sum(kv[1])):
                f.write(f"{typ},{core},{len(v)},{sum(v):.3f},{min(v):.3f},{sum(v) / len(v):.3f},{max(v):.3f},"
                        f"{100 * sum(v) / total:.2f}\n")  # fmt: skip

    def truncate(self) -> None:
        """Simulate a profiler killed mid-write: cut the trace in the middle of an event."""
        path = self.out / "trace_view.json"
        size = path.stat().st_size
        with path.open("r+b") as f:
            f.truncate(int(size * 0.7) + 17)


def generate(root: Path, cfg: Config) -> dict[str, Any]:
    topo = Topology(cfg)
    root.mkdir(parents=True, exist_ok=True)
    compute = compute_times(cfg, topo)
    ranks = [RankWriter(cfg, topo, root, r, compute).write() for r in range(cfg.ranks)]
    hidden = cfg.allreduce_ms * cfg.overlap
    cmax = max(compute)
    truth: dict[str, Any] = {
        "config": asdict(cfg),
        "ranks": ranks,
        "compute_ms": compute,
        "comm_ms": [
            cfg.allreduce_ms - hidden + (max(compute[i] for i in topo.dp_group(r)) - compute[r])
            + ((cfg.p2p_ms + cmax - max(compute[i] for i in topo.dp_group(r))) if cfg.pp > 1 else 0.0)
            for r in range(cfg.ranks)
        ],  # mean exposed communication per step, without spikes
        "stages": [topo.dp_group(s * topo.dp) for s in range(cfg.pp)],
    }  # fmt: skip
    (root / "truth.json").write_text(json.dumps(truth, indent=1))
    return truth


def parse_pair(text: str, kind: type) -> tuple[Any, Any]:
    a, _, b = text.partition(":")
    return int(a), kind(b)


def main(argv: list[str] | None = None, out: TextIO = sys.stdout) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--kernels", type=int, default=200, help="kernels per step per rank (size knob)")
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--compute-ms", type=float, default=100.0)
    ap.add_argument("--allreduce-ms", type=float, default=40.0)
    ap.add_argument("--overlap", type=float, default=0.5)
    ap.add_argument("--data-ms", type=float, default=1.0)
    ap.add_argument("--free-ms", type=float, default=3.0)
    ap.add_argument("--slow-rank", type=int)
    ap.add_argument("--slow-factor", type=float, default=1.3)
    ap.add_argument("--slow-link", help="SRC:DST global ranks of the degraded link")
    ap.add_argument("--stage-imbalance", help="STAGE:FACTOR compute factor of one pipeline stage")
    ap.add_argument("--spike-steps", default="", help="comma-separated steps with an AllReduce spike")
    ap.add_argument("--spike-ms", type=float, default=200.0)
    ap.add_argument("--truncate-rank", type=int)
    ap.add_argument("--hot-op", help="TYPE:SHARE make one op type take this share of compute (e.g. MatMul:0.7)")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    cfg = Config(
        ranks=a.ranks, steps=a.steps, kernels=a.kernels, pp=a.pp, compute_ms=a.compute_ms,
        allreduce_ms=a.allreduce_ms, overlap=a.overlap, data_ms=a.data_ms, free_ms=a.free_ms,
        slow_rank=a.slow_rank, slow_factor=a.slow_factor,
        slow_link=parse_pair(a.slow_link, int) if a.slow_link else None,
        stage_imbalance=parse_pair(a.stage_imbalance, float) if a.stage_imbalance else None,
        spike_steps=[int(x) for x in a.spike_steps.split(",") if x], spike_ms=a.spike_ms,
        truncate_rank=a.truncate_rank, seed=a.seed,
        hot_op=(a.hot_op.split(":")[0], float(a.hot_op.split(":")[1])) if a.hot_op else None,
    )  # fmt: skip
    generate(a.out, cfg)
    out.write(f"wrote {cfg.ranks} ranks to {a.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
