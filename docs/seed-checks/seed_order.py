"""Seed §4.2 #5: "set_seed() must be called after init(), otherwise ranks initialise different weights".

Run under msrun with 2 workers (see run_checks.sh). SEED=before|after|none.
"""
import os

import mindspore as ms
from mindspore import nn
from mindspore.communication import get_rank, init

mode = os.environ.get("SEED", "before")
ms.set_device("CPU")
if mode == "before":
    ms.set_seed(7)
init()
if mode == "after":
    ms.set_seed(7)
net = nn.Dense(16, 16)
print(f"SEED={mode} rank={get_rank()} weight_sum={float(net.weight.sum()):.6f}")
