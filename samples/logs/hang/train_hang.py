"""2-rank data-parallel job on CPU where rank 1 stops before its all-reduce at step 3.

Run by make_sample.sh under msrun. Rank 1 sleeps at the beginning of step 3 (a stand-in for a hang:
deadlock, blocking I/O); rank 0 enters the gradient all-reduce of step 3 and fails with MindSpore's
real CPU collective timeout.
"""

import time

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.communication import get_group_size, get_rank, init
from mindspore.train import Callback, LossMonitor, Model

ms.set_device("CPU")
init()
rank, size = get_rank(), get_group_size()
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
ms.set_seed(0)


class StopOnRank(Callback):
    """Rank 1 stops making progress at the beginning of step 3 (it never reaches the all-reduce)."""

    def on_train_step_begin(self, run_context):  # noqa: ANN001
        step = run_context.original_args().cur_step_num
        if rank == 1 and step == 3:
            time.sleep(600)


def data():
    rng = np.random.default_rng(rank)
    for _ in range(8):
        x = rng.standard_normal((4, 8)).astype(np.float32)
        yield x, x.sum(axis=1, keepdims=True)


ds = ms.dataset.GeneratorDataset(data, ["x", "y"], shuffle=False)
net = nn.Dense(8, 1)
model = Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), 0.01))
model.train(1, ds, callbacks=[LossMonitor(1), StopOnRank()], dataset_sink_mode=False)
print(f"rank {rank}/{size}: done", flush=True)
