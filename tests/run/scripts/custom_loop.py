"""Data-parallel training with a custom loop (value_and_grad), as in MindSpore's tutorials.

    msrun --worker_num=2 --local_worker_num=2 --master_port=8118 --join=True custom_loop.py

--fault, on one rank at one step:
  hang   the rank stops before its step (a debugging breakpoint, a rank-only branch that blocks)
  nan    a batch with a NaN target
  shape  a batch of another width reaches the network
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

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--fault", choices=["none", "hang", "nan", "shape", "crash"], default="none")
parser.add_argument("--fault-rank", type=int, default=1)
parser.add_argument("--fault-step", type=int, default=5)
args = parser.parse_args()

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
init()
rank, world = get_rank(), get_group_size()
ms.set_seed(1)

rng = np.random.default_rng(rank)
x = rng.normal(size=(args.steps * args.batch, 16)).astype(np.float32)
y = (x @ np.linspace(-1, 1, 16, dtype=np.float32)[:, None]).astype(np.float32)
dataset = GeneratorDataset(list(zip(x, y, strict=True)), ["x", "y"], shuffle=False).batch(args.batch)

net = nn.SequentialCell(nn.Dense(16, 32), nn.ReLU(), nn.Dense(32, 1))
loss_fn = nn.MSELoss()
optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
grad_reducer = nn.DistributedGradReducer(optimizer.parameters, mean=True, degree=world)


def forward_fn(data, label):
    return loss_fn(net(data), label)


grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)


def train_step(data, label):
    loss, grads = grad_fn(data, label)
    grads = grad_reducer(grads)
    optimizer(grads)
    return loss


for step, (data, label) in enumerate(dataset.create_tuple_iterator(), start=1):
    if rank == args.fault_rank and step == args.fault_step:
        if args.fault == "hang":
            time.sleep(3600)
        elif args.fault == "nan":
            label[0, 0] = float("nan")
        elif args.fault == "shape":
            data = ms.ops.concat([data, data], axis=1)
        elif args.fault == "crash":
            ctypes.string_at(0)
    loss = train_step(data, label)
    print(f"rank {rank} step {step}: loss {loss.asnumpy():.4f}", flush=True)
print(f"rank {rank} of {world}: done")
