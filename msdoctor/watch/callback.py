"""The watchdog as a MindSpore ``Callback`` for ``Model.train`` (MindSpore is imported here only).

``Model.train(..., callbacks=[wd.callback()])``: step begin marks phase "step" (the compiled
forward/backward/all-reduce), step end records the step with the network outputs — a plain loss,
or ``(loss, overflow, loss_scale)`` from ``TrainOneStepWithLossScaleCell`` — and the time between
the previous step end and this step begin is the data wait (dataset fetch, non-sink mode).
"""

from __future__ import annotations

from typing import Any

from mindspore.train import Callback

from msdoctor.watch.watchdog import Watchdog


def _device_mem() -> int | None:
    """Bytes held by the device memory pool, where the backend reports it (CPU always says 0)."""
    import mindspore as ms

    try:
        if ms.get_context("device_target") == "CPU":
            return None
        return int(ms.runtime.memory_allocated())
    except (RuntimeError, ValueError, AttributeError):
        return None


class WatchdogCallback(Callback):  # type: ignore[misc]
    def __init__(self, wd: Watchdog) -> None:
        super().__init__()
        self.wd = wd
        if wd.device_mem is None:
            wd.device_mem = _device_mem

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        # Model.train enters every callback as a context manager: an exception raised anywhere in
        # the loop — by another callback too (LossMonitor's "Invalid loss" on a NaN) — reaches here
        if exc is not None and isinstance(exc, Exception):
            self.wd.exception(exc, source="Model.train")

    def on_train_begin(self, run_context: Any) -> None:
        if self.wd._fd is None and self.wd.enabled:
            self.wd.start()

    def on_train_step_begin(self, run_context: Any) -> None:
        try:
            cb = run_context.original_args()
            self.wd.phase("step", int(cb.cur_step_num))
        except Exception as exc:  # never break Model.train
            self.wd._contain("callback.step_begin", exc)

    def on_train_step_end(self, run_context: Any) -> None:
        try:
            cb = run_context.original_args()
            metrics: dict[str, Any] = {}
            out = cb.net_outputs
            if isinstance(out, (tuple, list)):
                if len(out) >= 1:
                    metrics["loss"] = out[0]
                if len(out) >= 3:
                    metrics["overflow"] = out[1]
                    metrics["loss_scale"] = out[2]
            elif out is not None:
                metrics["loss"] = out
            self.wd.step(int(cb.cur_step_num), **metrics)
            self.wd.phase("data", int(cb.cur_step_num) + 1)
        except Exception as exc:  # never break Model.train
            self.wd._contain("callback.step_end", exc)

    def on_train_end(self, run_context: Any) -> None:
        self.wd.close("ok")
