"""Seed §2.1 / §4.1 row 6: `self.layernorm.gamma.shard(((1, 1),))`. Does a Parameter have `shard`?"""
import mindspore as ms
from mindspore import nn

ms.set_device("CPU")
ln = nn.LayerNorm((8,))
print("LayerNorm parameters:", [p.name for p in ln.get_parameters()])
print("hasattr(gamma, 'shard'):", hasattr(ln.gamma, "shard"))
try:
    ln.gamma.shard(((1, 1),))
    print("gamma.shard: no error")
except Exception as exc:
    print(f"gamma.shard: {type(exc).__name__}: {exc}")
