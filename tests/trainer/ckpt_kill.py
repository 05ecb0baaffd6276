"""Kill the bundled trainer's checkpoint save with SIGKILL at random moments, then resume.

Run as a script (``python ckpt_kill.py RUN_DIR TRIALS SEED``) by ``test_ckpt_kill.py``: MindSpore
is imported once here, then each trial forks a saver that calls the trainer's own ``Trainer._save``
step after step (every parameter filled with the step number, so a file's content says which step
wrote it) and is killed with SIGKILL: in even trials a random moment after its temp file appeared
(mid-write), in odd ones at a random offset of up to two save durations; after each kill the
trainer's own ``Trainer._resume`` loads the latest checkpoint into zeroed parameters. Prints one
JSON line per trial.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import mindspore as ms
import numpy as np
from mindspore import nn
from msdoctor_trainer import ckpt as ckpt_files
from msdoctor_trainer.train import Trainer


def make_trainer(run_dir: Path) -> SimpleNamespace:
    """What Trainer._save/_resume read from a trainer: a real optimizer over ~24 MB of state."""
    net = nn.SequentialCell([nn.Dense(1024, 1024) for _ in range(2)])
    opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-3)
    cfg = SimpleNamespace(train=SimpleNamespace(keep_ckpt=2))
    return SimpleNamespace(rank=0, save_all_ranks=False, opt=opt, run_dir=run_dir, cfg=cfg,
                           scaler=SimpleNamespace(scale=1024.0), start_step=0)  # fmt: skip


def fill(t: SimpleNamespace, value: float) -> None:
    for x in t.opt.get_parameters():
        if x.name != "learning_rate":
            x.set_data(ms.Tensor(np.full(x.shape, value, dtype=np.float32), x.dtype))


def saver(t: SimpleNamespace, first_step: int, out_fd: int) -> None:
    """The forked child: save steps first_step, first_step+1, ... until killed."""
    step = first_step
    parent = os.getppid()
    while os.getppid() == parent:  # never outlive this script (a test time-out kills it, not the child)
        fill(t, float(step))
        Trainer._save(t, step)  # type: ignore[arg-type]
        os.write(out_fd, f"{step}\n".encode())
        step += 1


def main() -> int:
    run_dir, trials, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    ms.set_device("CPU")
    t = make_trainer(run_dir)
    fill(t, 1.0)
    t0 = time.monotonic()
    Trainer._save(t, 1)  # type: ignore[arg-type]
    save_s = time.monotonic() - t0
    ckpt_dir = ckpt_files.rank_dir(run_dir / "ckpt", 0)
    next_step = 2
    for trial in range(trials):
        r, w = os.pipe()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                saver(t, next_step, w)
            finally:
                os._exit(1)
        os.close(w)
        with os.fdopen(r, "rb", buffering=0) as pipe:
            announced = [int(pipe.readline())]  # one complete save in this trial: the child is saving now
            if trial % 2 == 0:
                # Half the kills land while bytes are being written: wait for the child's temp file.
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline and not any(
                    p.name.startswith(f".tmp-{pid}-") for p in ckpt_dir.iterdir()
                ):
                    time.sleep(0.001)
                time.sleep(rng.uniform(0, 0.02))
            else:
                time.sleep(rng.uniform(0, 2 * save_s))  # anywhere in the save loop
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            announced += [int(x) for x in pipe.read().split()]
        tmp = sorted(p.name for p in ckpt_dir.iterdir() if p.name.startswith(".tmp-"))
        fill(t, 0.0)
        t.start_step = 0
        Trainer._resume(t)  # type: ignore[arg-type]
        values = {float(x.asnumpy().min()) for x in t.opt.get_parameters() if x.name != "learning_rate"}
        values |= {float(x.asnumpy().max()) for x in t.opt.get_parameters() if x.name != "learning_rate"}
        left = sorted(p.name for p in ckpt_dir.iterdir() if p.name.startswith(".tmp-"))
        print(json.dumps({"trial": trial, "last_announced": announced[-1], "resumed": t.start_step,
                          "values": sorted(values), "tmp_after_kill": tmp, "tmp_after_resume": left}),
              flush=True)  # fmt: skip
        next_step = t.start_step + 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
