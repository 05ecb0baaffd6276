"""Seed §4.1 row 1, §4.3, §3.5 #4: do the APIs and parameters the seed names exist in 2.10?"""
import inspect

import mindspore as ms
from mindspore import amp, nn
from mindspore.parallel import set_algo_parameters

print("nn.LossScaleUpdateCell exists:", hasattr(nn, "LossScaleUpdateCell"))
print("nn.DynamicLossScaleUpdateCell:", inspect.signature(nn.DynamicLossScaleUpdateCell))
print("nn.FixedLossScaleUpdateCell:", inspect.signature(nn.FixedLossScaleUpdateCell))
print("set_algo_parameters:", inspect.signature(set_algo_parameters))
try:
    set_algo_parameters(enable_alltoall=True)
    print("set_algo_parameters(enable_alltoall=True): no error")
except Exception as exc:
    print(f"set_algo_parameters(enable_alltoall=True): {type(exc).__name__}: {exc}")
print("amp.get_black_list() (kept in float32 by O2):", sorted(str(c.__name__) for c in amp.get_black_list()))
print("'LayerNorm' in O1 white list (cast to float16):",
      any(c.__name__ == "LayerNorm" for c in amp.get_white_list()))
print("mindspore", ms.__version__)
