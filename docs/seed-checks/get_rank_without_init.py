"""Seed §3.5 #1: does get_rank() "return -1" when init() was not called?"""
import mindspore as ms
from mindspore.communication import get_rank

ms.set_device("CPU")
try:
    print("get_rank() without init:", get_rank())
except Exception as exc:
    print(f"get_rank() without init: {type(exc).__name__}: {str(exc).splitlines()[0]}")
