"""The MindSpore side in-process (CPU, PyNative): model shapes and loss, the shape injection's real
error, and the corpus → MindRecord → sharded MindDataset round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")

from msdoctor_trainer.config import ModelConfig, ParallelConfig  # noqa: E402
from msdoctor_trainer.data import make_dataset, windows, write_mindrecord  # noqa: E402
from msdoctor_trainer.tokenizer import ByteTokenizer  # noqa: E402

SMALL = ModelConfig(seq_length=16, hidden_size=32, num_layers=2, num_heads=4, ffn_hidden_size=64)


@pytest.fixture(scope="module", autouse=True)
def cpu():
    ms.set_device("CPU")
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _tokens(b: int = 2) -> object:
    rng = np.random.default_rng(0)
    return ms.Tensor(rng.integers(0, 256, (b, SMALL.seq_length + 1)).astype(np.int32))


def test_gpt_logits_shape_and_initial_loss():
    from msdoctor_trainer.model import GPT

    ms.set_seed(0)
    net = GPT(SMALL, ParallelConfig())
    logits = net.forward_logits(_tokens()[:, :-1])
    assert logits.shape == (2 * SMALL.seq_length, SMALL.vocab_size)
    loss = float(net(_tokens()).asnumpy())
    assert abs(loss - math.log(SMALL.vocab_size)) < 0.1  # near-uniform prediction at init


def test_tied_and_untied_head_and_layernorm_params():
    from msdoctor_trainer.model import GPT, count_params, layernorm_params

    tied = GPT(SMALL, ParallelConfig())
    untied = GPT(ModelConfig(**{**SMALL.__dict__, "tie_word_embeddings": False}), ParallelConfig())
    assert count_params(untied) - count_params(tied) == SMALL.vocab_size * SMALL.hidden_size
    ln = layernorm_params(tied)
    assert len(ln) == 2 * (2 * SMALL.num_layers + 1)  # gamma+beta of ln1, ln2 per block and ln_f
    assert {p.name.rsplit(".", 1)[1] for p in ln} == {"gamma", "beta"}


def test_shape_injection_raises_mindspores_batchmatmul_error():
    from msdoctor_trainer.model import GPT

    net = GPT(SMALL, ParallelConfig(), k_heads=SMALL.num_heads // 2)
    with pytest.raises(ValueError, match="BatchMatMul"):
        net(_tokens())


def test_mindrecord_round_trip_sharded_by_rank(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text = " ".join(f"{i:04d}" for i in range(500))  # every 17-byte window is distinct
    (corpus / "a.txt").write_text(text)
    out = tmp_path / "c.mindrecord"
    n = write_mindrecord(corpus, out, 16)
    expected = windows(ByteTokenizer().encode(text), 16)
    assert n == len(expected) > 10
    seen = []
    for rank in (0, 1):
        ds = make_dataset(out, rank, 2, micro_batch=1, seed=1)
        it = ds.create_tuple_iterator(output_numpy=True)
        rows = [tuple(next(it)[0][0].tolist()) for _ in range(n // 2)]
        assert len(set(rows)) == n // 2  # one epoch of this shard: no repeats
        seen.append(set(rows))
    assert not (seen[0] & seen[1])  # ranks read disjoint shards
    assert seen[0] | seen[1] <= {tuple(r.tolist()) for r in expected}


def test_write_mindrecord_without_text_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no \\*.txt"):
        write_mindrecord(tmp_path, tmp_path / "x.mindrecord", 16)


def test_float16_mixed_precision_trains_on_cpu_bfloat16_does_not():
    from msdoctor_trainer.model import GPT

    ms.set_seed(0)
    net = GPT(SMALL, ParallelConfig())
    net.to_float(ms.float16)
    opt = ms.nn.AdamWeightDecay(net.trainable_params(), 1e-3)
    loss, grads = ms.value_and_grad(net, None, opt.parameters)(_tokens())
    assert math.isfinite(float(loss.asnumpy())) and grads[0].dtype == ms.float32  # fp32 master weights
    bf = GPT(SMALL, ParallelConfig())
    bf.to_float(ms.bfloat16)
    with pytest.raises(TypeError, match="Unsupported data type"):  # what PAR411 prevents
        bf(_tokens())
