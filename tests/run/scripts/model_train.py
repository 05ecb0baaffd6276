"""Data-parallel regression with Model.train, as in MindSpore's tutorials. Run under msrun.

    msrun --worker_num=2 --local_worker_num=2 --master_port=8118 --join=True model_train.py

--fault reproduces a mistake of the kind that happens in real jobs, on one rank at one sample:
  hang   the data source blocks (a stuck read on a network filesystem)
  nan    the data source returns a NaN target
  shape  the data source returns a sample of another width
  crash  the process dies in native code (segfault)
"""

import argparse
import ctypes
import time

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.communication import get_group_size, get_rank, init
from mindspore.dataset import GeneratorDataset
from mindspore.train import Model

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--fault", choices=["none", "hang", "nan", "shape", "crash"], default="none")
parser.add_argument("--fault-rank", type=int, default=1)
parser.add_argument("--fault-step", type=int, default=5)
parser.add_argument("--distributed", type=int, default=1)
args = parser.parse_args()

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
rank, world = 0, 1
if args.distributed:
    init()
    rank, world = get_rank(), get_group_size()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
ms.set_seed(1)


class Source:
    """Samples of y = x·w + noise; this rank's share of them."""

    def __init__(self, n):
        rng = np.random.default_rng(rank)
        self.x = rng.normal(size=(n, 16)).astype(np.float32)
        self.y = (self.x @ np.linspace(-1, 1, 16, dtype=np.float32)[:, None]).astype(np.float32)

    def __getitem__(self, i):
        x, y = self.x[i], self.y[i]
        step = i // args.batch + 1
        if rank == args.fault_rank and step == args.fault_step:
            if args.fault == "hang":
                time.sleep(3600)
            elif args.fault == "nan":
                y = np.full_like(y, np.nan)
            elif args.fault == "shape":
                x = np.concatenate([x, x])
            elif args.fault == "crash":
                ctypes.string_at(0)
        return x, y

    def __len__(self):
        return len(self.x)


data = GeneratorDataset(Source(args.steps * args.batch), ["x", "y"], shuffle=False)
data = data.batch(args.batch)
net = nn.SequentialCell(nn.Dense(16, 32), nn.ReLU(), nn.Dense(32, 1))
model = Model(net, loss_fn=nn.MSELoss(), optimizer=nn.Momentum(net.trainable_params(), 0.01, 0.9))
model.train(1, data, callbacks=[ms.train.LossMonitor()], dataset_sink_mode=False)
print(f"rank {rank} of {world}: done")
