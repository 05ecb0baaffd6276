"""The in-rank watchdog: step metrics, heartbeats with the main thread's position, stack dumps.

Usable from a custom loop (``wd.step(step, loss=…)``) and, through :meth:`Watchdog.callback`, as a
MindSpore ``Callback`` for ``Model.train``. Its own failures are contained: an I/O error disables
it with one line on stderr; the training it watches never stops or slows because of it.

Cost per step: one ``os.write`` of one JSON line to a file descriptor kept open, plus one
``/proc`` read for the RSS. Heartbeats come from a daemon thread once per ``heartbeat_s``.
"""

from __future__ import annotations

import errno
import faulthandler
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msdoctor import rundir as events
from msdoctor.rundir import STACK_SIGNAL as STACK_SIGNAL
from msdoctor.rundir import encode_number as _finite
from msdoctor.rundir import number as number  # re-exported: the decoder of the encoding above

# Frames under these path fragments are library code: `where_user` skips them so a rank blocked
# inside MindSpore's Python wrappers still reports the line of the training script that called in.
_LIBRARY_MARKERS = ("site-packages", "dist-packages", f"{os.sep}lib{os.sep}python3", f"{os.sep}msdoctor{os.sep}watch{os.sep}")


def _where(frame: Any) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"


def main_thread_position() -> tuple[str | None, str | None]:
    """('file:line function' of the main thread's innermost frame, same for its innermost user frame)."""
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    if frame is None:
        return None, None
    inner = _where(frame)
    f: Any = frame
    while f is not None:
        if not any(m in f.f_code.co_filename for m in _LIBRARY_MARKERS):
            return inner, _where(f)
        f = f.f_back
    return inner, None


class _Rss:
    """Host RSS of this process; the psutil handle is made once (a Process() per step costs more)."""

    def __init__(self) -> None:
        self._proc: Any = None
        try:
            import psutil

            self._proc = psutil.Process()
        except Exception:  # psutil missing or /proc unreadable: the fact is simply absent
            self._proc = None

    def __call__(self) -> int | None:
        if self._proc is None:
            return None
        try:
            return int(self._proc.memory_info().rss)
        except Exception:  # process table unreadable (containers): absent, never fatal
            return None


class Watchdog:
    def __init__(
        self,
        run_dir: str | Path,
        rank: int,
        world: int | None = None,
        heartbeat_s: float = 1.0,
        enabled: bool = True,
        device_mem: Callable[[], int | None] | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.rank = rank
        self.world = world
        self.heartbeat_s = heartbeat_s
        self.enabled = enabled
        self.device_mem = device_mem
        self.path = events.rank_file(self.run_dir, rank)
        self.last_step: int | None = None
        self.phase_name = "init"
        self.phase_step: int | None = None
        self.errors = 0  # contained failures of the watchdog itself
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stack_fh: Any = None
        self._fd: int | None = None
        self._rss = _Rss()
        self._lock = threading.Lock()
        # held while the heartbeat writes and while close() writes "end": no heartbeat follows the end event
        self._end_lock = threading.RLock()
        # per-step timing kept by phase(): how long the main thread spent in each phase since the last step
        self._phase_t = time.perf_counter()
        self._phase_times: dict[str, float] = {}
        self._last_step_t: float | None = None
        self._last_progress = time.time()
        self._reserve: Path | None = None
        self._seen_exc: list[BaseException] = []  # recorded already (the same one reaches several hooks)
        self._prev_hooks: tuple[Any, Any] | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, config: dict[str, Any] | None = None) -> Watchdog:
        if not self.enabled:
            return self
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = events.open_append(self.path)  # a FIFO there is refused, never blocked on
            self._set_aside()
            self._stack_fh = open(events.stack_file(self.run_dir, self.rank), "a")  # noqa: SIM115 - lives until close()
            # SIGUSR1 from the supervisor dumps every thread; a fatal signal (segfault) dumps too.
            faulthandler.register(STACK_SIGNAL, file=self._stack_fh, all_threads=True, chain=False)
            if not faulthandler.is_enabled():
                faulthandler.enable(file=self._stack_fh, all_threads=True)
        except (OSError, ValueError, RuntimeError) as exc:
            self._disable(f"cannot prepare {self.path.parent}: {exc}")
            return self
        main_ident = threading.main_thread().ident or 0
        self.emit(
            "start",
            world=self.world,
            pid=os.getpid(),
            host=socket.gethostname(),
            main_thread=f"0x{main_ident:016x}",
            heartbeat_s=self.heartbeat_s,
            argv=sys.argv,
            config=_plain(config or {}),
            device_target=_device_target(),
            comm_env={k: os.environ[k][:64] for k in COMM_ENV if k in os.environ},
        )
        self._last_step_t = time.perf_counter()
        self._install_hooks()
        self._thread = threading.Thread(target=self._beat, name=f"msdoctor-heartbeat-{self.rank}", daemon=True)
        self._thread.start()
        return self

    def _install_hooks(self) -> None:
        """Record an exception however it ends the rank: uncaught in the main thread (``sys.excepthook``)
        or in another thread (``threading.excepthook``), besides ``with wd:``, the trainer's own error
        path and the Model.train callback (any callback's exception, e.g. LossMonitor's NaN)."""
        prev_sys, prev_thread = sys.excepthook, threading.excepthook
        self._prev_hooks = (prev_sys, prev_thread)

        def sys_hook(tp: Any, exc: Any, tb: Any) -> None:
            try:
                if isinstance(exc, Exception):
                    self.exception(exc, source="sys.excepthook")
                    self.close("failed")
            finally:
                prev_sys(tp, exc, tb)

        def thread_hook(args: Any) -> None:
            try:
                if isinstance(args.exc_value, Exception):
                    name = getattr(args.thread, "name", "?")
                    self.exception(args.exc_value, source=f"threading.excepthook (thread {name})")
            finally:
                prev_thread(args)

        sys.excepthook = sys_hook
        threading.excepthook = thread_hook
        self._hooks = (sys_hook, thread_hook)

    def _remove_hooks(self) -> None:
        if self._prev_hooks is None:
            return
        mine = getattr(self, "_hooks", (None, None))
        if sys.excepthook is mine[0]:
            sys.excepthook = self._prev_hooks[0]
        if threading.excepthook is mine[1]:
            threading.excepthook = self._prev_hooks[1]
        self._prev_hooks = None

    def close(self, status: str = "ok") -> None:
        self._remove_hooks()
        if not self.enabled:
            return
        with self._end_lock:
            self._stop.set()
            self.emit("end", step=self.last_step, status=status, watchdog_errors=self.errors)
        if self._reserve is not None:
            try:
                self._reserve.unlink()
            except OSError:
                self.errors += 1
            self._reserve = None
        if self._thread is not None:
            self._thread.join(timeout=2 * self.heartbeat_s)
        self.enabled = False
        try:
            faulthandler.unregister(STACK_SIGNAL)
        except (ValueError, RuntimeError):
            self.errors += 1
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                self.errors += 1
            self._fd = None
        # the stack file stays open on purpose: faulthandler.enable() may still write a fatal dump to it

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc is not None and not isinstance(exc, (KeyboardInterrupt, SystemExit)):
            self.exception(exc)
        self.close("failed" if exc is not None else "ok")

    def callback(self) -> Any:
        """This watchdog as a MindSpore ``Callback`` for ``Model.train`` (imports MindSpore)."""
        from msdoctor.watch.callback import WatchdogCallback

        return WatchdogCallback(self)

    # -- events ---------------------------------------------------------------------------------
    def emit(self, kind: str, **fields: Any) -> None:
        if not self.enabled:
            return
        event = {"t": time.time(), "rank": self.rank, "kind": kind}
        event.update(fields)
        try:
            line = events.dumps_event(event)
            if self._fd is not None:
                os.write(self._fd, line)
            else:
                events.append(self.path, event)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                self._record_disk_full(exc)
            self._disable(f"cannot write {self.path}: {exc}")
        except (TypeError, ValueError) as exc:
            self._disable(f"cannot write {self.path}: {exc}")

    def _set_aside(self) -> None:
        """64 KiB to free when the disk fills up, so the event that says so can still be written."""
        path = events.reserve_file(self.run_dir, self.rank)
        try:
            with open(path, "wb") as fh:
                fh.write(b"\0" * RESERVE_BYTES)
            self._reserve = path
        except OSError:
            self._reserve = None  # no room even now: a full disk will go unrecorded

    def _record_disk_full(self, exc: OSError) -> None:
        if self._reserve is None or self._fd is None:
            return
        try:
            self._reserve.unlink()
            self._reserve = None
            event = {"t": time.time(), "rank": self.rank, "kind": "watchdog_error", "where": "write",
                     "error": str(exc)[:300], "disk_full": True, "step": self.last_step}
            os.write(self._fd, b"\n" + events.dumps_event(event))  # "\n" ends a line cut by the short write
        except OSError:
            return

    def phase(self, name: str, step: int | None = None) -> None:
        """Mark what the main thread is about to do ('data', 'forward', 'collective', 'save', …)."""
        try:
            now = time.perf_counter()
            with self._lock:
                self._phase_times[self.phase_name] = self._phase_times.get(self.phase_name, 0.0) + now - self._phase_t
                self._phase_t = now
                self.phase_name = name
                self.phase_step = step
                self._last_progress = time.time()
            self.emit("phase", step=step, phase=name)
        except Exception as exc:  # the watchdog must never break the loop it watches
            self._contain("phase", exc)

    def step(self, step: int, **metrics: Any) -> None:
        """Record a completed step: loss, grad_norm, loss_scale, overflow, step_time, data_wait, …

        ``step_time`` defaults to the wall time since the previous step (or start), ``data_wait`` to the
        time spent in phase "data" since then; ``phases`` gets the seconds spent in each phase.
        """
        if not self.enabled:
            return
        try:
            now = time.perf_counter()
            with self._lock:
                self._phase_times[self.phase_name] = self._phase_times.get(self.phase_name, 0.0) + now - self._phase_t
                phases, self._phase_times = self._phase_times, {}
                self._phase_t = now
                self.phase_name = "step-done"
                self.phase_step = step
                self.last_step = step
                self._last_progress = time.time()
            if self._last_step_t is not None:
                metrics.setdefault("step_time", now - self._last_step_t)
            self._last_step_t = now
            if "data" in phases:
                metrics.setdefault("data_wait", phases["data"])
            metrics.setdefault("phases", {k: round(v, 6) for k, v in phases.items() if v > 0})
            metrics.setdefault("rss", self._rss())
            if self.device_mem is not None and "device_mem" not in metrics:
                metrics["device_mem"] = self.device_mem()
            self.emit("step", step=step, **{k: _plain(v) for k, v in metrics.items()})
        except Exception as exc:  # the watchdog must never break the loop it watches
            self._contain("step", exc)

    def checksum_params(self, step: int, params: Any) -> None:
        """Per-parameter checksum (sum and sum of squares in float64) of MindSpore ``Parameter``s.

        Compared across ranks by the supervisor: replicas that should be identical but differ
        (unsynchronised LayerNorm gamma/beta, a misplaced ``set_seed``) show up by name. Accepts
        objects with ``.name`` and ``.asnumpy()`` or a mapping name → array.
        """
        if not self.enabled:
            return
        try:
            import numpy as np

            items = params.items() if hasattr(params, "items") else ((p.name, p) for p in params)
            sums: dict[str, list[float | str]] = {}
            for name, p in items:
                raw = p.asnumpy() if hasattr(p, "asnumpy") else p
                a = np.asarray(raw, dtype=np.float64)
                sums[str(name)] = [_finite(float(a.sum())), _finite(float(np.square(a).sum()))]
        except Exception as exc:  # a checksum must never break training
            self._contain("checksum", exc)
            return
        self.emit("checksum", step=step, sums=sums)

    def exception(self, exc: BaseException, source: str | None = None) -> None:
        """Record an exception (once, however many hooks see it); ``source`` says which hook did."""
        if any(exc is e for e in self._seen_exc):
            return
        self._seen_exc = [*self._seen_exc[-7:], exc]
        try:
            self.emit(
                "exception",
                source=source,
                step=self.phase_step if self.phase_step is not None else self.last_step,  # the step in progress
                phase=self.phase_name,
                type=type(exc).__name__,
                message=str(exc)[:4000],
                traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-8000:],
            )
        except Exception as err:  # formatting an exotic exception must not mask the original one
            self._contain("exception", err)

    # -- internals ------------------------------------------------------------------------------
    def _heartbeat_phase(self) -> str | None:
        """The phase a heartbeat reports: the one the loop set (the bootstrap infers one from the stack)."""
        return self.phase_name

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                phase = self._heartbeat_phase()
                where, where_user = main_thread_position()
                fields = {"step": self.last_step, "phase": phase, "phase_step": self.phase_step, "where": where,
                          "where_user": where_user, "since": self._last_progress, "rss": self._rss()}  # fmt: skip
                with self._end_lock:  # close() may have written "end" while this beat looked at the main thread
                    if self._stop.is_set():
                        return
                    self.emit("heartbeat", **fields)
            except Exception as exc:  # never let the heartbeat thread die noisily inside training
                self._disable(f"heartbeat failed: {exc}")
                return

    def _contain(self, where: str, exc: BaseException) -> None:
        self.errors += 1
        if self.errors <= 3:  # a broken metric must not flood the stream
            self.emit("watchdog_error", where=where, error=repr(exc)[:500])

    def _disable(self, why: str) -> None:
        if self.enabled:
            self.enabled = False
            if self._reserve is not None:
                self._reserve.unlink(missing_ok=True)
                self._reserve = None
            print(f"msdoctor watchdog (rank {self.rank}) disabled: {why}", file=sys.stderr)


RESERVE_BYTES = 64 * 1024

# the environment that sets a rank's collective time-out (see msdoctor.facts.run.collective_timeout)
COMM_ENV = ("MS_CPU_COMM_OP_TIMEOUT", "MS_NODE_TIMEOUT", "HCCL_EXEC_TIMEOUT", "HCCL_CONNECT_TIMEOUT")


def _device_target() -> str | None:
    """The backend MindSpore runs on, if the script imported and set it already (never imports it)."""
    ms = sys.modules.get("mindspore")
    if ms is None:
        return None
    try:
        v = ms.get_context("device_target")
        return str(v) if v else None
    except Exception:  # an old or partial MindSpore: unknown
        return None


def _plain(v: Any) -> Any:
    """Tensors / numpy scalars → Python numbers (non-finite as strings), so events stay plain JSON."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return _finite(v)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    for attr in ("asnumpy", "item"):
        fn = getattr(v, attr, None)
        if callable(fn):
            try:
                out = fn()
                if hasattr(out, "size") and getattr(out, "size", 1) != 1:
                    return _plain(out.tolist())
                out = out.item() if hasattr(out, "item") else out
                return _plain(out) if isinstance(out, (bool, int, float)) else str(out)
            except Exception:  # an exotic tensor type: keep its text rather than fail the step
                return str(v)
    return str(v)
