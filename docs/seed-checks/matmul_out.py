"""Seed §2.2: `ops.matmul(q, k.transpose(2, 3), out=q)` "reuses q's memory". Does `out=` exist in 2.10?"""
import inspect

import mindspore as ms
from mindspore import ops

ms.set_device("CPU")
print("ops.matmul signature:", inspect.signature(ops.matmul))
print("ops.softmax signature:", inspect.signature(ops.softmax))
a = ops.ones((2, 2), ms.float32)
for label, fn in (
    ("ops.matmul(a, a, out=a)", lambda: ops.matmul(a, a, out=a)),
    ("ops.softmax(a, axis=-1, out=a)", lambda: ops.softmax(a, axis=-1, out=a)),
):
    try:
        fn()
        print(f"{label}: no error")
    except Exception as exc:
        print(f"{label}: {type(exc).__name__}: {exc}")
