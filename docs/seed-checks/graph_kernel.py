"""Seed §4.1 row 3: `set_context(enable_graph_kernel=True)` "makes the memory optimizer work"."""
import mindspore as ms

ms.set_device("CPU")
ms.set_context(enable_graph_kernel=True)  # prints the 2.10 deprecation warning on stderr
print("enable_graph_kernel accepted; see the WARNING line above (context.py)")
