"""2-rank data-parallel job on CPU whose loss diverges to Inf/NaN (learning rate far too high).

LossMonitor prints the loss of every step and stops the run with MindSpore's real message once the loss is
NaN or Inf. Run by make_sample.sh under msrun.
"""

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.communication import get_rank, init
from mindspore.train import LossMonitor, Model

ms.set_device("CPU")
init()
rank = get_rank()
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
ms.set_seed(0)


def data():
    rng = np.random.default_rng(rank)
    for _ in range(40):
        x = rng.standard_normal((4, 8)).astype(np.float32) * 10
        yield x, x.sum(axis=1, keepdims=True)


ds = ms.dataset.GeneratorDataset(data, ["x", "y"], shuffle=False)
net = nn.Dense(8, 1)
model = Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), learning_rate=5.0))  # diverges in a few steps
model.train(1, ds, callbacks=[LossMonitor(1)], dataset_sink_mode=False)
