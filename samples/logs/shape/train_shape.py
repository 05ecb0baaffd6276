"""2-rank data-parallel job on CPU with a sharded-attention style head-split bug.

Each rank is meant to own n_heads / world_size attention heads: the query projection is split that way, but
the key projection keeps the global head count (the classic "global instead of local heads" slip of tensor
parallel code). The score MatMul q @ k^T then sees 16 query columns against 32 key rows and MindSpore raises
its real shape error on every rank. Run by make_sample.sh under msrun.
"""

import mindspore as ms
import numpy as np
from mindspore import nn, ops
from mindspore.communication import get_group_size, get_rank, init
from mindspore.train import LossMonitor, Model

ms.set_device("CPU")
init()
rank, size = get_rank(), get_group_size()
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
ms.set_seed(0)

HIDDEN, N_HEADS = 32, 4
HEAD_DIM = HIDDEN // N_HEADS


class ShardedAttentionScore(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        local_heads = N_HEADS // size
        self.q = nn.Dense(HIDDEN, local_heads * HEAD_DIM)  # split by the local head count
        self.k = nn.Dense(HIDDEN, N_HEADS * HEAD_DIM)  # bug: global head count
        self.out = nn.Dense(8, 1)

    def construct(self, x):  # noqa: ANN001, ANN201
        q = self.q(x)  # (8, 16)
        k = self.k(x)  # (8, 32)
        scores = ops.matmul(q, k.T)  # 'x1_col': 16 vs 'x2_row': 32
        return self.out(scores)


def data():
    rng = np.random.default_rng(rank)
    for _ in range(4):
        x = rng.standard_normal((8, HIDDEN)).astype(np.float32)
        yield x, x.sum(axis=1, keepdims=True)


net = ShardedAttentionScore()
ds = ms.dataset.GeneratorDataset(data, ["x", "y"], shuffle=False)
model = Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), 0.01))
model.train(1, ds, callbacks=[LossMonitor(1)], dataset_sink_mode=False)
