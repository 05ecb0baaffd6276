"""A GPT-style decoder in MindSpore 2.10 whose operators declare their SEMI_AUTO_PARALLEL strategies.

Every matmul, softmax and elementwise op is a primitive with ``.shard(...)`` from the
``ParallelConfig``: column-parallel q/k/v and fc1 (weights split on the output dim by ``mp``),
row-parallel out-projection and fc2 (split on the input dim, then reduced), attention split by
heads. On CPU the strategies are recorded but not used: MindSpore refuses semi-auto parallel on the
CPU backend, so only data parallel runs for real there (README "platform").

LayerNorm gamma/beta are replicated on every rank (strategy ``(1,)``) and are therefore plain
data-parallel parameters: their gradients must be all-reduced like every other replicated weight.
:func:`layernorm_params` names them so the training loop can do that explicitly (and so the
``desync-layernorm`` injection can leave them out, the seed article's "unsharded LayerNorm").
"""

from __future__ import annotations

import math

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn, ops
from mindspore.common.initializer import Normal, initializer
from msdoctor_trainer.config import ModelConfig, ParallelConfig


class Linear(nn.Cell):
    """``y = x @ W^T + b`` over 2-D input ``(tokens, in)``.

    ``column`` splits W's output dim over ``mp`` (q/k/v, fc1); otherwise W's input dim is split
    (out-proj, fc2) and the partial products are reduced by the framework.
    """

    def __init__(self, n_in: int, n_out: int, p: ParallelConfig, column: bool, std: float) -> None:
        super().__init__()
        dp, mp = p.data_parallel, p.model_parallel
        self.weight = Parameter(initializer(Normal(std), (n_out, n_in), ms.float32), name="weight")
        self.bias = Parameter(initializer("zeros", (n_out,), ms.float32), name="bias")
        self.matmul = ops.MatMul(transpose_b=True)
        self.add = ops.Add()
        if column:
            self.matmul.shard(((dp, 1), (mp, 1)))
            self.add.shard(((dp, mp), (mp,)))
        else:
            self.matmul.shard(((dp, mp), (1, mp)))
            self.add.shard(((dp, 1), (1,)))

    def construct(self, x: Tensor) -> Tensor:
        return self.add(self.matmul(x, self.weight), self.bias)


class LayerNorm(nn.Cell):
    """LayerNorm with gamma/beta replicated on all ranks (explicit strategy, see module doc)."""

    def __init__(self, n: int, p: ParallelConfig, eps: float) -> None:
        super().__init__()
        self.gamma = Parameter(initializer("ones", (n,), ms.float32), name="gamma")
        self.beta = Parameter(initializer("zeros", (n,), ms.float32), name="beta")
        self.norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=eps)
        self.norm.shard(((p.data_parallel, 1), (1,), (1,)))

    def construct(self, x: Tensor) -> Tensor:
        y, _, _ = self.norm(x, self.gamma, self.beta)
        return y


class Attention(nn.Cell):
    """Causal multi-head self-attention, split by heads over ``mp``.

    ``k_heads`` is the number of heads the key projection is reshaped into; it equals
    ``num_heads`` except under the ``shape`` injection, where q and k disagree on the head split and
    MindSpore's BatchMatMul raises its real shape error.
    """

    def __init__(self, m: ModelConfig, p: ParallelConfig, k_heads: int | None = None) -> None:
        super().__init__()
        dp, mp = p.data_parallel, p.model_parallel
        h = m.hidden_size
        self.n_head = m.num_heads
        self.k_heads = k_heads or m.num_heads
        self.head_dim = h // m.num_heads
        std = m.init_std
        self.q = Linear(h, h, p, column=True, std=std)
        self.k = Linear(h, h, p, column=True, std=std)
        self.v = Linear(h, h, p, column=True, std=std)
        self.proj = Linear(h, h, p, column=False, std=std / math.sqrt(2 * m.num_layers))
        self.transpose = ops.Transpose().shard(((dp, 1, mp, 1),))
        self.merge = ops.Transpose().shard(((dp, mp, 1, 1),))
        self.scores = ops.BatchMatMul(transpose_b=True).shard(((dp, mp, 1, 1), (dp, mp, 1, 1)))
        self.context = ops.BatchMatMul().shard(((dp, mp, 1, 1), (dp, mp, 1, 1)))
        self.scale = ops.Mul().shard(((dp, mp, 1, 1), ()))
        self.mask_add = ops.Add().shard(((dp, mp, 1, 1), (1, 1)))
        self.softmax = ops.Softmax(axis=-1).shard(((dp, mp, 1, 1),))
        t = m.seq_length
        causal = np.triu(np.full((t, t), -1e9, dtype=np.float32), k=1)
        self.causal = Tensor(causal)
        self.inv_sqrt = Tensor(1.0 / math.sqrt(self.head_dim), ms.float32)

    def construct(self, x: Tensor, b: int, t: int) -> Tensor:
        h = self.n_head * self.head_dim
        q = self.transpose(ops.reshape(self.q(x), (b, t, self.n_head, self.head_dim)), (0, 2, 1, 3))
        k = self.transpose(ops.reshape(self.k(x), (b, t, self.k_heads, h // self.k_heads)), (0, 2, 1, 3))
        v = self.transpose(ops.reshape(self.v(x), (b, t, self.n_head, self.head_dim)), (0, 2, 1, 3))
        s = self.scale(self.scores(q, k), self.inv_sqrt)
        s = self.mask_add(s, self.causal[:t, :t])
        ctx = self.merge(self.context(self.softmax(s), v), (0, 2, 1, 3))
        return self.proj(ops.reshape(ctx, (b * t, h)))


class MLP(nn.Cell):
    def __init__(self, m: ModelConfig, p: ParallelConfig) -> None:
        super().__init__()
        self.fc1 = Linear(m.hidden_size, m.ffn_hidden_size, p, column=True, std=m.init_std)
        self.fc2 = Linear(m.ffn_hidden_size, m.hidden_size, p, column=False,
                          std=m.init_std / math.sqrt(2 * m.num_layers))
        self.act = ops.GeLU().shard(((p.data_parallel, p.model_parallel),))

    def construct(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Cell):
    def __init__(self, m: ModelConfig, p: ParallelConfig, k_heads: int | None = None) -> None:
        super().__init__()
        self.ln1 = LayerNorm(m.hidden_size, p, m.layernorm_eps)
        self.attn = Attention(m, p, k_heads)
        self.ln2 = LayerNorm(m.hidden_size, p, m.layernorm_eps)
        self.mlp = MLP(m, p)
        self.add = ops.Add().shard(((p.data_parallel, 1), (p.data_parallel, 1)))
        if p.recompute:
            self.recompute()

    def construct(self, x: Tensor, b: int, t: int) -> Tensor:
        x = self.add(x, self.attn(self.ln1(x), b, t))
        return self.add(x, self.mlp(self.ln2(x)))


class GPT(nn.Cell):
    """Token + position embedding, ``num_layers`` blocks, final LayerNorm, tied or untied LM head.

    ``construct(tokens)`` returns the mean next-token cross-entropy over ``tokens[:, 1:]``.
    """

    def __init__(self, m: ModelConfig, p: ParallelConfig, k_heads: int | None = None) -> None:
        super().__init__()
        dp, mp = p.data_parallel, p.model_parallel
        self.cfg = m
        self.wte = Parameter(initializer(Normal(m.init_std), (m.vocab_size, m.hidden_size), ms.float32), name="wte")
        self.wpe = Parameter(initializer(Normal(m.init_std), (m.seq_length, m.hidden_size), ms.float32), name="wpe")
        self.gather = ops.Gather().shard(((mp, 1), (dp, 1)))  # vocab-parallel embedding
        self.pos_add = ops.Add().shard(((dp, 1, 1), (1, 1)))
        self.blocks = nn.CellList([Block(m, p, k_heads) for _ in range(m.num_layers)])
        self.ln_f = LayerNorm(m.hidden_size, p, m.layernorm_eps)
        self.head: Parameter | None = None
        if not m.tie_word_embeddings:
            self.head = Parameter(initializer(Normal(m.init_std), (m.vocab_size, m.hidden_size), ms.float32),
                                  name="lm_head")
        self.logits = ops.MatMul(transpose_b=True).shard(((dp, 1), (mp, 1)))
        self.loss = ops.SparseSoftmaxCrossEntropyWithLogits()

    def forward_logits(self, ids: Tensor) -> Tensor:
        b, t = ids.shape
        x = self.pos_add(self.gather(self.wte, ids, 0), self.wpe[:t])
        x = ops.reshape(x, (b * t, self.cfg.hidden_size))
        for block in self.blocks:
            x = block(x, b, t)
        x = self.ln_f(x)
        w = self.wte if self.head is None else self.head
        return self.logits(x, w)

    def construct(self, tokens: Tensor) -> Tensor:
        ids = tokens[:, :-1]
        labels = ops.reshape(tokens[:, 1:], (-1,))
        return self.loss(self.forward_logits(ids), labels)


def layernorm_params(net: nn.Cell) -> list[Parameter]:
    """The LayerNorm gamma/beta of ``net`` (replicated; all-reduced explicitly by the loop)."""
    return [p for p in net.trainable_params() if p.name.endswith((".gamma", ".beta"))]


def count_params(net: nn.Cell) -> int:
    return int(sum(int(np.prod(p.shape)) for p in net.trainable_params()))
