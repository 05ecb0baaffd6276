"""Single-device training, run as `python one_device.py` (no launcher).

--fault at one step: crash (segfault in native code), shape (a batch of another width).
"""

import argparse
import ctypes

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.dataset import NumpySlicesDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--fault", choices=["none", "crash", "shape"], default="none")
parser.add_argument("--fault-step", type=int, default=5)
args = parser.parse_args()

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
rng = np.random.default_rng(0)
x = rng.normal(size=(args.steps * 8, 16)).astype(np.float32)
y = x.sum(axis=1, keepdims=True)
dataset = NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)

net = nn.Dense(16, 1)
optimizer = nn.Adam(net.trainable_params(), 1e-2)
grad_fn = ms.value_and_grad(lambda a, b: nn.MSELoss()(net(a), b), None, optimizer.parameters)

for step, batch in enumerate(dataset.create_dict_iterator(), start=1):
    data = batch["x"]
    if step == args.fault_step and args.fault == "crash":
        ctypes.string_at(0)
    if step == args.fault_step and args.fault == "shape":
        data = data[:, :8]
    loss, grads = grad_fn(data, batch["y"])
    optimizer(grads)
    print(f"step {step}: loss {float(loss.asnumpy()):.4f}")
