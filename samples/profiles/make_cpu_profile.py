"""Produce the real CPU profile sample: a tiny 2-rank data-parallel MindSpore job under msrun.

Run (from the repository root; picks a free port, ~1 min on 2 cores):

    python samples/profiles/make_cpu_profile.py            # launcher: runs msrun, then tidies the output
    (msrun runs this same file with MSDOCTOR_PROFILE_WORKER=1 on every rank)

Each rank trains a small Dense network for 6 steps with `mindspore.profiler.profile`
(activities=[CPU], a schedule of wait=1, warmup=1, active=3) and writes
`<out>/<host>_<pid>_<ts>_ascend_ms/` as MindSpore does; the AllReduce of the gradients is a real
CPU collective.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "cpu_2rank"


def worker(out_dir: str) -> None:
    import mindspore as ms
    import numpy as np
    from mindspore import nn
    from mindspore.communication import get_rank, init

    ms.set_device("CPU")
    init()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    rank = get_rank()
    ms.set_seed(1)
    net = nn.SequentialCell(nn.Dense(64, 256), nn.ReLU(), nn.Dense(256, 256), nn.ReLU(), nn.Dense(256, 8))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    step_fn = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
    rng = np.random.default_rng(rank)
    with ms.profiler.profile(
        activities=[ms.profiler.ProfilerActivity.CPU],
        schedule=ms.profiler.schedule(wait=1, warmup=1, active=3, repeat=1, skip_first=0),
        on_trace_ready=ms.profiler.tensorboard_trace_handler(out_dir),
    ) as prof:
        for _ in range(6):
            x = ms.Tensor(rng.standard_normal((128, 64)).astype(np.float32))
            y = ms.Tensor(rng.integers(0, 8, 128).astype(np.int32))
            step_fn(x, y)
            prof.step()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch() -> int:
    raw = HERE / "_cpu_raw"
    shutil.rmtree(raw, ignore_errors=True)
    # msrun starts workers with the `python` found on PATH: make it this interpreter's.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = dict(os.environ, PATH=path, MSDOCTOR_PROFILE_WORKER="1", MSDOCTOR_PROFILE_OUT=str(raw / "prof"))
    msrun = Path(sys.executable).with_name("msrun")
    cmd = [
        "nice", "-n", "10", str(msrun), "--worker_num=2", "--local_worker_num=2",
        f"--master_port={free_port()}", f"--log_dir={raw / 'logs'}", "--join=True", __file__,
    ]  # fmt: skip
    rc = subprocess.call(cmd, env=env)
    if rc != 0:
        print(f"msrun failed (rc={rc}); logs in {raw / 'logs'}", file=sys.stderr)
        return rc
    shutil.rmtree(OUT, ignore_errors=True)
    shutil.move(str(raw / "prof"), str(OUT))
    shutil.rmtree(raw, ignore_errors=True)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    if os.environ.get("MSDOCTOR_PROFILE_WORKER") == "1":
        worker(os.environ["MSDOCTOR_PROFILE_OUT"])
    else:
        raise SystemExit(launch())
