"""Seed §3.5 #1: "init() must come before set_context(), otherwise get_rank() returns -1".

Run under msrun (see run_checks.sh). ORDER=context_first|init_first.
"""
import os

import mindspore as ms
from mindspore.communication import get_group_size, get_rank, init

order = os.environ.get("ORDER", "context_first")
if order == "context_first":
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    init()
else:
    init()
    try:
        ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
        print("set_context after init: no error")
    except Exception as exc:
        print(f"set_context after init: {type(exc).__name__}: {str(exc).splitlines()[0]}")
print(f"ORDER={order} rank={get_rank()} size={get_group_size()}")
