"""Seed §3.5 #3: `ops.clip_by_norm(grads, clip_norm=1.0, axis=0)`. What is the real 2.10 API?"""
import inspect

import mindspore as ms
from mindspore import ops

ms.set_device("CPU")
print("ops.clip_by_norm signature:", inspect.signature(ops.clip_by_norm))
print("ops.clip_by_global_norm signature:", inspect.signature(ops.clip_by_global_norm))
grads = (ops.ones((2, 2), ms.float32) * 3, ops.ones((3,), ms.float32))
try:
    ops.clip_by_norm(grads, clip_norm=1.0, axis=0)
    print("seed call: no error")
except Exception as exc:
    print(f"seed call: {type(exc).__name__}: {exc}")
out = ops.clip_by_global_norm(grads, clip_norm=1.0)
total = float(ops.sqrt(sum((g * g).sum() for g in out)))
print(f"ops.clip_by_global_norm(grads, clip_norm=1.0): global norm after clipping = {total:.4f}")
