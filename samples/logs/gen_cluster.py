#!/usr/bin/env python3
"""Generate a synthetic msrun log tree of N ranks with one injected culprit (tests and bench/bench_logs.py).

The culprit rank stops making progress without logging an error (last step one earlier than its peers);
every other rank floods consequence errors in the real MindSpore 2.10 CPU wording (ring all-reduce wait
failures naming its left neighbour, the kernel launch failure, the exception banner), and the scheduler
blames some other node first. Around that: WARNING/INFO noise, a binary garbage file, a truncated worker
log, a GB18030 line among UTF-8 ones, an msrun console with interleaved lines of several ranks, and
optionally one node whose clock is off.

    python samples/logs/gen_cluster.py OUT [--ranks 1024] [--culprit R] [--noise 4] [--skew-node K --skew 3600]

Line templates are copied from samples/logs/hang (real output); only the numbers are synthetic.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

T0 = time.mktime((2026, 11, 29, 10, 0, 0, 0, 0, 0))
NOISE = (
    "[WARNING] DISTRIBUTED({pid},7f2b13fff6c0,python):{ts} [mindspore/ccsrc/include/cluster/rpc/libevent_tcp_server.h:51] TcpConnection] TcpConnection is constructed! fd is {n}",
    "[WARNING] DEVICE({pid},7f2b561e3b80,python):{ts} [mindspore/ccsrc/plugin/cpu/res_manager/collective/ms_collective_comm_lib.cc:152] CreateCommunicationGroup] The group mccl_world_group has already existed.",
    "[INFO] DISTRIBUTED({pid},7f2b137fe6c0,python):{ts} [mindspore/ccsrc/cluster/rpc/core/communicator/tcp_server.cc:314] Start] Event base dispatch success!",
    "[WARNING] MD({pid},fffdf0ff91e0,python):{ts} [mindspore/ccsrc/minddata/dataset/engine/datasetops/source/generator_op.cc:220] operator()] Bad performance attention, it takes more than {n} seconds to generator.__next__ new row, which might cause `GetNext` timeout problem when sink_mode=True.",
    "[WARNING] DISTRIBUTED({pid},7f2b561e3b80,python):{ts} [mindspore/ccsrc/cluster/topology/compute_graph_node.cc:201] Register] Failed to connect to the meta server node url: 127.0.0.1:{n}",
)
NOISE_QUIET = (*NOISE[:3], NOISE[4],
    "[INFO] ME({pid},7f2b561e3b80,python):{ts} [mindspore/ccsrc/pipeline/jit/ps/pipeline.cc:1200] Compile] Start compiling graph {n}.",
    "[INFO] PROFILER({pid},7f2b561e3b80,python):{ts} [mindspore/ccsrc/debug/profiler/profiling.cc:{n}] Step] step time {n} us",
)
START = (
    "[WARNING] DISTRIBUTED({pid},7f2b561e3b80,python):{ts} [mindspore/ccsrc/cluster/topology/cluster_context.cc:316] BuildCluster] Topology build timed out., retry(1/1200).",
    "[WARNING] DISTRIBUTED({pid},7f2b561e3b80,python):{ts} [mindspore/ccsrc/cluster/topology/cluster_context.cc:319] BuildCluster] Cluster is successfully initialized.",
    "[WARNING] DISTRIBUTED({pid},7f2b561e3b80,python):{ts} [mindspore/ccsrc/cluster/topology/cluster_context.cc:428] PostProcess] This node {rank} rank id: {rank}",
)
WAIT = "[ERROR] DISTRIBUTED({pid},7feac5ffc6c0,python):{ts} [mindspore/ccsrc/cluster/rpc/core/collective_ops_impl.cc:162] RunRingAllReduce] Ring ReduceScatter wait receiving [{peer},{req}] failed."
KERNEL = "[ERROR] KERNEL({pid},7feac5ffc6c0,python):{ts} [mindspore/ops/kernel/cpu/native/allreduce_cpu_kernel.cc:89] Launch] AllReduceCPUKernelMod launch failed."
BANNER = """Traceback (most recent call last):
  File "train.py", line 44, in <module>
    model.train(1, ds, callbacks=[LossMonitor(1)], dataset_sink_mode=False)
RuntimeError:{trailing_space}
----------------------------------------------------
- Kernel error:
----------------------------------------------------
Launch kernel failed: Default/AllReduce-op0

----------------------------------------------------
- C++ Call Stack: (For framework developers)
----------------------------------------------------
mindspore/ccsrc/backend/ms_backend/runtime/actors/base/kernel_actor.cc:995 OnMemoryAllocFinish
""".format(trailing_space=" ")  # MindSpore prints "RuntimeError: " before the banner
SCHED_REG = "[WARNING] DISTRIBUTED(100,7f11e8c9e6c0,python):{ts} [mindspore/ccsrc/cluster/topology/meta_server_node.cc:254] ProcessRegister] The new node: {rank}(role: MS_WORKER), rank id: {rank}, device id: {dev}, hostname: node{node}, ip: 10.0.0.{node} is registered successfully. Currently registered node number: {k}, expected node number: {n}"
SCHED_TO = "[ERROR] DISTRIBUTED(100,7f11e8c9e6c0,python):{ts} [mindspore/ccsrc/cluster/topology/meta_server_node.cc:548] UpdateTopoState] The node: {rank} is timed out. It may exit with exception, please check this node's log."
SCHED_EXC = "RuntimeError: The total number of timed out node is {k}. Timed out node list is: [const vector]{{{nodes}}}, worker {first} is the first one timed out, please check its log."


def ts(t: float) -> str:
    lt = time.localtime(t)
    us = int(round((t - int(t)) * 1e6))
    return time.strftime("%Y-%m-%d-%H:%M:%S", lt) + f".{us // 1000:03d}.{us % 1000:03d}"


def rank_lines(rank: int, n: int, culprit: int, steps: int, noise: int, rng: random.Random, skew: float,
               flood: int) -> list[str]:  # fmt: skip
    pid = 20000 + rank
    out: list[str] = []
    t = T0 + skew + rng.random() * 0.5
    for tpl in START:
        out.append(tpl.format(pid=pid, ts=ts(t), rank=rank))
        t += 0.05
    last = steps - 1 if rank == culprit else steps
    for step in range(1, last + 1):
        for _ in range(noise):
            t += rng.random() * 0.05
            tpl = NOISE[3] if rng.random() < 0.02 else rng.choice(NOISE_QUIET)  # 2 % a real MD warning rule
            out.append(tpl.format(pid=pid, ts=ts(t), n=rng.randint(1, 60000)))
        t += 0.2
        out.append(f"epoch: 1 step: {step}, loss is {1.0 / step + rng.random() * 0.01:.6f}")
    if rank == culprit:
        for _ in range(noise):  # alive (heartbeats, INFO) but never reaches the next step
            t += 1.0
            out.append(NOISE[2].format(pid=pid, ts=ts(t)))
        return out
    t += 30.0  # MS_CPU_COMM_OP_TIMEOUT default
    peer = (rank - 1) % n
    for i in range(flood):
        out.append(WAIT.format(pid=pid, ts=ts(t + i * 0.001), peer=peer, req=7 + i))
        out.append(KERNEL.format(pid=pid, ts=ts(t + i * 0.001)))
    out.extend(BANNER.rstrip("\n").split("\n"))
    return out


def generate(out: str | Path, ranks: int = 1024, culprit: int | None = None, steps: int = 10, noise: int = 4,
             flood: int = 3, per_node: int = 8, seed: int = 0, skew_node: int | None = None,
             skew: float = 0.0) -> dict[str, Any]:  # fmt: skip
    """Write the tree under ``out``; returns what was injected (for tests)."""
    rng = random.Random(seed)
    root = Path(out)
    culprit = rng.randrange(ranks) if culprit is None else culprit
    nodes = (ranks + per_node - 1) // per_node
    truncated = (culprit + ranks // 2) % ranks
    gbk_rank = (culprit + 1) % ranks
    blamed = (culprit + 3) % ranks  # the scheduler times out a waiting rank first, not the culprit
    total = 0
    console: list[str] = []
    for r in range(ranks):
        node = r // per_node
        d = root / f"node_{node:04d}"
        d.mkdir(parents=True, exist_ok=True)
        lines = rank_lines(r, ranks, culprit, steps, noise, rng, skew if node == skew_node else 0.0, flood)
        if node == 0:
            console.extend(lines[: 3 + noise])
        data = ("\n".join(lines) + "\n").encode("utf-8")
        if r == gbk_rank:  # a Chinese console line written in the local code page among UTF-8 lines
            data = data.replace(b"\n", "\n[ERROR] ME(1:1,MainProcess):数据集加载失败\n".encode("gb18030"), 1)
        if r == truncated:  # the node died while writing: the file ends mid-line
            data = data[: len(data) - 37]
        (d / f"worker_{r}.log").write_bytes(data)
        total += len(data)
    sched = root / "node_0000" / "scheduler.log"
    lines = [SCHED_REG.format(ts=ts(T0 + 0.1 + i * 0.001), rank=i, dev=i % per_node, node=i // per_node, k=i + 1, n=ranks)
             for i in range(ranks)]  # fmt: skip
    t_to = T0 + steps * 2 + 45
    lines.append(SCHED_TO.format(ts=ts(t_to), rank=blamed))
    lines.append("Traceback (most recent call last):")
    lines.append(SCHED_EXC.format(k=1, nodes=blamed, first=blamed))
    sched.write_text("\n".join(lines) + "\n", encoding="utf-8")
    head = [f"Start worker process with rank id:{r}, log file:{root}/node_0000/worker_{r}.log. Environment variable [RANK_ID={r}] is exported. Execute command: python train.py"
            for r in range(min(per_node, ranks))]  # fmt: skip
    rng.shuffle(console)  # several processes write one console: their lines interleave
    (root / "node_0000" / "msrun.log").write_text("\n".join(head + console) + "\n", encoding="utf-8")
    garbage = root / f"node_{min(1, nodes - 1):04d}" / "plog-4242_20261129100000000.log"
    garbage.write_bytes(bytes(rng.randrange(256) for _ in range(4096)) + b"\x00" * 512)
    info = {"ranks": ranks, "culprit": culprit, "blamed_by_scheduler": blamed, "truncated_rank": truncated,
            "gb18030_rank": gbk_rank, "garbage": str(garbage), "bytes": total, "skew_node": skew_node}  # fmt: skip
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--culprit", type=int, default=None)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--noise", type=int, default=4, help="noise lines per step and rank (scales the size)")
    ap.add_argument("--flood", type=int, default=3, help="repeated consequence lines per waiting rank")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skew-node", type=int, default=None)
    ap.add_argument("--skew", type=float, default=0.0, help="seconds the skewed node's clock is off")
    a = ap.parse_args()
    info = generate(a.out, a.ranks, a.culprit, a.steps, a.noise, a.flood, seed=a.seed, skew_node=a.skew_node, skew=a.skew)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
