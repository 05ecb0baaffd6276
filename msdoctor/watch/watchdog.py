"""The in-rank watchdog: step metrics, heartbeats with the main thread's position, stack dumps.

Usable from a custom loop (``wd.step(step, loss=…)``) and, through :meth:`Watchdog.callback`, as a
MindSpore ``Callback`` for ``Model.train``. Its own failures are contained: an I/O error disables
it with one line on stderr; the training it watches never stops or slows because of it.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from msdoctor.watch import events

STACK_SIGNAL = signal.SIGUSR1


def _main_thread_where() -> str | None:
    """'file:line function' of the main thread's innermost frame (cheap: no full stack walk)."""
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"


def _rss() -> int | None:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # psutil missing or /proc unreadable: the fact is simply absent
        return None


class Watchdog:
    def __init__(
        self,
        run_dir: str | Path,
        rank: int,
        world: int | None = None,
        heartbeat_s: float = 1.0,
        enabled: bool = True,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.rank = rank
        self.world = world
        self.heartbeat_s = heartbeat_s
        self.enabled = enabled
        self.path = events.rank_file(self.run_dir, rank)
        self.last_step: int | None = None
        self.phase_name = "init"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stack_fh: Any = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, config: dict[str, Any] | None = None) -> Watchdog:
        if not self.enabled:
            return self
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._stack_fh = open(events.stack_file(self.run_dir, self.rank), "a")
            faulthandler.register(STACK_SIGNAL, file=self._stack_fh, all_threads=True, chain=False)
        except (OSError, ValueError, RuntimeError) as exc:
            self._disable(f"cannot prepare {self.path.parent}: {exc}")
            return self
        self.emit(
            "start",
            world=self.world,
            pid=os.getpid(),
            host=socket.gethostname(),
            argv=sys.argv,
            config=config or {},
        )
        self._thread = threading.Thread(target=self._beat, name=f"msdoctor-heartbeat-{self.rank}", daemon=True)
        self._thread.start()
        return self

    def close(self, status: str = "ok") -> None:
        if not self.enabled:
            return
        self._stop.set()
        self.emit("end", step=self.last_step, status=status)
        if self._thread is not None:
            self._thread.join(timeout=2 * self.heartbeat_s)
        self.enabled = False

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc is not None and not isinstance(exc, (KeyboardInterrupt, SystemExit)):
            self.exception(exc)
        self.close("failed" if exc is not None else "ok")

    # -- events ---------------------------------------------------------------------------------
    def emit(self, kind: str, **fields: Any) -> None:
        if not self.enabled:
            return
        event = {"t": time.time(), "rank": self.rank, "kind": kind}
        event.update(fields)
        try:
            events.append(self.path, event)
        except (OSError, TypeError, ValueError) as exc:
            self._disable(f"cannot write {self.path}: {exc}")

    def phase(self, name: str, step: int | None = None) -> None:
        """Mark what the main thread is about to do ('data', 'forward', 'collective', 'save', …)."""
        self.phase_name = name
        self.emit("phase", step=step, phase=name)

    def step(self, step: int, **metrics: Any) -> None:
        """Record a completed step: loss, grad_norm, loss_scale, overflow, step_time, data_wait, …"""
        self.last_step = step
        self.phase_name = "step-done"
        metrics.setdefault("rss", _rss())
        self.emit("step", step=step, **{k: _plain(v) for k, v in metrics.items()})

    def checksum_params(self, step: int, params: Any) -> None:
        """Per-parameter checksum (sum and sum of squares in float64) of MindSpore ``Parameter``s.

        Compared across ranks by the supervisor: replicas that should be identical but differ
        (unsynchronised LayerNorm gamma/beta, a misplaced ``set_seed``) show up by name.
        """
        if not self.enabled:
            return
        try:
            import numpy as np

            sums: dict[str, list[float]] = {}
            for p in params:
                a = np.asarray(p.asnumpy(), dtype=np.float64)
                sums[p.name] = [float(a.sum()), float(np.square(a).sum())]
        except Exception as exc:  # a checksum must never break training
            self.emit("watchdog_error", where="checksum", error=repr(exc))
            return
        self.emit("checksum", step=step, sums=sums)

    def exception(self, exc: BaseException) -> None:
        self.emit(
            "exception",
            step=self.last_step,
            type=type(exc).__name__,
            message=str(exc),
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        )

    # -- internals ------------------------------------------------------------------------------
    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                self.emit(
                    "heartbeat", step=self.last_step, phase=self.phase_name, where=_main_thread_where(), rss=_rss()
                )
            except Exception as exc:  # never let the heartbeat thread die noisily inside training
                self._disable(f"heartbeat failed: {exc}")
                return

    def _disable(self, why: str) -> None:
        if self.enabled:
            self.enabled = False
            print(f"msdoctor watchdog (rank {self.rank}) disabled: {why}", file=sys.stderr)


def _plain(v: Any) -> Any:
    """Tensors / numpy scalars → Python numbers, so events stay plain JSON."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    for attr in ("item", "asnumpy"):
        fn = getattr(v, attr, None)
        if callable(fn):
            try:
                out = fn()
                return out.item() if hasattr(out, "item") else out
            except Exception:
                return str(v)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return str(v)
