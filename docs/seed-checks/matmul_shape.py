"""Seed §4.1 row 5 ("qk.T ... Invalid shape"): what MindSpore 2.10 really says for mismatched inner dims."""
import mindspore as ms
from mindspore import nn, ops

ms.set_device("CPU")
q = ops.ones((2, 4, 8), ms.float32)  # (batch, seq, head_dim)
k = ops.ones((2, 4, 6), ms.float32)  # head_dim sliced differently on this "rank"
for label, fn in (
    ("ops.matmul(q, k.swapaxes(1, 2))", lambda: ops.matmul(q, k.swapaxes(1, 2)).asnumpy()),
    ("ops.matmul 2-D", lambda: ops.matmul(ops.ones((2, 3)), ops.ones((4, 5))).asnumpy()),
    ("nn.Dense(8, 4) on a (2, 6) input", lambda: nn.Dense(8, 4)(ops.ones((2, 6))).asnumpy()),
):
    try:
        fn()
        print(f"{label}: no error")
    except Exception as exc:  # we want the real text, whatever the type
        print(f"{label}: {type(exc).__name__}: {str(exc).splitlines()[0]}")

# The primitive the seed's attention code compiles to in graph mode (and the text faults.md PAR-01 quotes).
matmul = ops.MatMul(transpose_b=True)
try:
    matmul(ops.ones((4, 8), ms.float32), ops.ones((4, 6), ms.float32)).asnumpy()
    print("ops.MatMul(transpose_b=True): no error")
except Exception as exc:
    print(f"ops.MatMul(transpose_b=True): {type(exc).__name__}: {str(exc).splitlines()[0]}")
