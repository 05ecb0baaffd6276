"""What the bootstrap does inside a rank: watchdog, import hook on MindSpore, exception hooks.

* The watchdog (heartbeats with the main thread's position, faulthandler on SIGUSR1 and on fatal
  signals) starts at once for an msrun worker, or once MindSpore is imported (see
  :func:`msdoctor.watch.bootstrap.identify`).
* An import hook patches MindSpore as its modules load: ``Model.train`` gets the watchdog callback
  (step, loss, overflow, data wait; MindFormers' ``BaseTrainer`` imports ``mindspore.train.model.Model``
  and calls ``model.train(…, callbacks=…)``, checked in its ``trainer/base_trainer.py``);
  a dataset iterator consumed by a custom loop on the main thread marks the steps (a batch fetched:
  step N begins; the next fetch: step N ended); ``communication.init()`` gives the rank where the
  launcher did not.
* Heartbeats name the phase from the main thread's call stack (dataset, collective, optimizer,
  compiled step, checkpoint save), so a custom loop shows where it is without any phase call.
* ``sys.excepthook`` / ``threading.excepthook`` record uncaught exceptions, then chain.

Every hook contains its own failures: the job never stops or changes behaviour because of it.
"""

from __future__ import annotations

import atexit
import functools
import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import threading
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from msdoctor.watch.bootstrap import ENV_BOOT_PID, ENV_HEARTBEAT, Identity
from msdoctor.watch.watchdog import Watchdog

# innermost MindSpore frame → phase (first match wins); user code innermost keeps the watchdog's phase
_STACK_PHASES: tuple[tuple[str, str], ...] = (
    ("/mindspore/dataset/", "data"),
    ("/mindspore/train/serialization", "save"),
    ("/mindspore/communication/", "collective"),
    ("comm_ops", "collective"),
    ("/mindspore/nn/optim/", "optimizer"),
    ("/mindspore/common/api.py", "step"),
    ("/mindspore/ops/composite/", "step"),
    ("/mindspore/nn/cell.py", "step"),
    ("/mindspore/nn/wrap/", "step"),
    ("/mindspore/common/", "step"),
    ("/mindspore/ops/", "step"),
)


def stack_phase(frame: Any) -> str | None:
    """The phase the main thread is in, from its innermost frames (None: in user code or unknown)."""
    f = frame
    while f is not None:
        name = f.f_code.co_filename.replace(os.sep, "/")
        if "/mindspore/" not in name and "/msdoctor/watch/" not in name and not name.startswith("<"):
            if "/site-packages/" not in name and "/lib/python3" not in name:
                return None  # the innermost frame that is the user's own code: no framework phase
        for marker, phase in _STACK_PHASES:
            if marker in name:
                return phase
        f = f.f_back
    return None


class BootWatchdog(Watchdog):
    """The watchdog with heartbeats whose phase comes from the call stack where the loop set none."""

    def _heartbeat_phase(self) -> str | None:
        frame = sys._current_frames().get(threading.main_thread().ident or -1)
        inferred = stack_phase(frame) if frame is not None else None
        del frame
        return inferred or self.phase_name


class _State:
    def __init__(self, ident: Identity, run_dir: Path) -> None:
        self.ident = ident
        self.run_dir = run_dir
        self.pid = os.getpid()
        self.wd: BootWatchdog | None = None
        self.in_train = 0  # inside Model.train: its callback marks the steps, not the iterator
        self.loop_step: int | None = None  # custom loop: the step whose batch was fetched last
        self.loop_steps = 0
        self.failed = False
        self.callback: Any = None
        self.lock = threading.Lock()

    def start(self, rank: int | None = None, world: int | None = None) -> None:
        with self.lock:
            if self.wd is not None or os.getpid() != self.pid:
                return
            rank = self.ident.rank if rank is None else rank
            if rank is None:
                return  # the rank is known only after communication.init()
            hb = float(os.environ.get(ENV_HEARTBEAT) or 1.0)
            self.wd = BootWatchdog(self.run_dir, rank, world if world is not None else self.ident.world, heartbeat_s=hb)
            os.environ[ENV_BOOT_PID] = str(os.getpid())  # processes this rank starts are not ranks
            self.wd.start(config={"bootstrap": True, "identified_by": self.ident.why,
                                  "launcher_env": {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}})

    @property
    def active(self) -> bool:
        return self.wd is not None and self.wd.enabled and os.getpid() == self.pid

    # -- custom loop steps from the dataset iterator --------------------------------------------
    def before_fetch(self) -> None:
        assert self.wd is not None
        if self.loop_step is not None:
            self.wd.step(self.loop_step)
        self.wd.phase("data", self.loop_steps + 1)

    def fetched(self) -> None:
        assert self.wd is not None
        self.loop_steps += 1
        self.loop_step = self.loop_steps
        self.wd.phase("step", self.loop_step)

    def exhausted(self) -> None:
        assert self.wd is not None
        if self.loop_step is not None:
            self.wd.step(self.loop_step)
            self.loop_step = None


_ENV_KEYS = ("RANK_ID", "RANK_SIZE", "MS_ROLE", "MS_NODE_ID", "MS_WORKER_NUM", "MS_SCHED_HOST", "MS_SCHED_PORT",
             "DEVICE_ID", "RANK_TABLE_FILE")
STATE: _State | None = None


def install(ident: Identity, run_dir: Path) -> None:
    global STATE
    if STATE is not None:
        return
    STATE = _State(ident, run_dir)
    sys.meta_path.insert(0, _Finder(_PATCHES))
    _install_excepthooks(STATE)
    atexit.register(_at_exit)
    if not ident.lazy:
        STATE.start()
    elif "mindspore" in sys.modules:
        _on_mindspore(sys.modules["mindspore"])


def _at_exit() -> None:
    st = STATE
    if st is not None and st.active and st.wd is not None:
        if st.loop_step is not None:
            st.exhausted()
        st.wd.close("failed" if st.failed else "ok")


def _install_excepthooks(st: _State) -> None:
    prev = sys.excepthook

    def excepthook(tp: type[BaseException], exc: BaseException, tb: types.TracebackType | None) -> None:
        if st.active and st.wd is not None and not issubclass(tp, KeyboardInterrupt):
            st.failed = True
            st.wd.exception(exc)
            st.wd.close("failed")
        prev(tp, exc, tb)

    sys.excepthook = excepthook
    prev_thread = threading.excepthook

    def thread_hook(args: Any) -> None:
        if st.active and st.wd is not None and args.exc_type is not SystemExit and args.exc_value is not None:
            st.wd.exception(args.exc_value)
        prev_thread(args)

    threading.excepthook = thread_hook


# -- patches applied as MindSpore's modules finish loading ------------------------------------


def _on_mindspore(mod: types.ModuleType) -> None:
    if STATE is not None and STATE.ident.rank is not None:
        STATE.start()


def _on_model(mod: types.ModuleType) -> None:
    model_cls = getattr(mod, "Model", None)
    orig = getattr(model_cls, "train", None)
    if model_cls is None or orig is None or getattr(orig, "_msdoctor", False):
        return
    sig = inspect.signature(orig)

    @functools.wraps(orig)
    def train(self: Any, *args: Any, **kwargs: Any) -> Any:
        st = STATE
        if st is None:
            return orig(self, *args, **kwargs)
        try:
            bound = sig.bind(self, *args, **kwargs)
            bound.arguments["callbacks"] = _with_callback(st, bound.arguments.get("callbacks"))
            args, kwargs = tuple(bound.args[1:]), dict(bound.kwargs)
        except Exception as exc:  # an unusual call: train as asked, unwatched steps
            if st.wd is not None:
                st.wd._contain("bootstrap.Model.train", exc)
        st.in_train += 1
        try:
            return orig(self, *args, **kwargs)
        finally:
            st.in_train -= 1

    train._msdoctor = True  # type: ignore[attr-defined]
    model_cls.train = train


def _with_callback(st: _State, callbacks: Any) -> Any:
    from msdoctor.watch.callback import WatchdogCallback

    if st.wd is None:
        st.start()
    if st.wd is None:
        return callbacks
    given = [] if callbacks is None else list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    if any(isinstance(c, WatchdogCallback) for c in given):
        return callbacks  # instrumented by hand already
    if st.callback is None:
        st.callback = _boot_callbacks(st.wd)
    # first: the step (its loss) is recorded before a user callback can raise on it (LossMonitor
    # raises on a NaN loss); last: the data phase starts once every callback of the step is done
    return [st.callback[0], *given, st.callback[1]]


def _boot_callbacks(wd: Watchdog) -> tuple[Any, Any]:
    from mindspore.train import Callback

    from msdoctor.watch.callback import WatchdogCallback

    class BootCallback(WatchdogCallback):  # type: ignore[misc]
        """Records the step; closes nothing at the end of training (the process may go on; atexit closes)."""

        def on_train_step_end(self, run_context: Any) -> None:
            try:
                cb = run_context.original_args()
                out = cb.net_outputs
                metrics: dict[str, Any] = {}
                if isinstance(out, (tuple, list)):
                    if len(out) >= 1:
                        metrics["loss"] = out[0]
                    if len(out) >= 3:
                        metrics["overflow"], metrics["loss_scale"] = out[1], out[2]
                elif out is not None:
                    metrics["loss"] = out
                self.wd.step(int(cb.cur_step_num), **metrics)
            except Exception as exc:  # never break Model.train
                self.wd._contain("bootstrap.step_end", exc)

        def on_train_end(self, run_context: Any) -> None:
            self.wd.phase("after-train", self.wd.last_step)

    class DataPhase(Callback):  # type: ignore[misc]
        def on_train_step_end(self, run_context: Any) -> None:
            try:
                wd.phase("data", int(run_context.original_args().cur_step_num) + 1)
            except Exception as exc:  # never break Model.train
                wd._contain("bootstrap.data_phase", exc)

    return BootCallback(wd), DataPhase()


def _on_iterators(mod: types.ModuleType) -> None:
    it_cls = getattr(mod, "Iterator", None)
    orig = getattr(it_cls, "__next__", None)
    if it_cls is None or orig is None or getattr(orig, "_msdoctor", False):
        return

    @functools.wraps(orig)
    def __next__(self: Any) -> Any:
        st = STATE
        if st is None or st.in_train or not st.active or threading.current_thread() is not threading.main_thread():
            return orig(self)
        try:
            st.before_fetch()
        except Exception:  # contained: the watchdog disables itself on I/O errors
            pass
        try:
            out = orig(self)
        except StopIteration:
            st.exhausted()
            raise
        st.fetched()
        return out

    __next__._msdoctor = True  # type: ignore[attr-defined]
    it_cls.__next__ = __next__


def _on_communication(mod: types.ModuleType) -> None:
    orig = getattr(mod, "init", None)
    if orig is None or getattr(orig, "_msdoctor", False):
        return

    @functools.wraps(orig)
    def init(*args: Any, **kwargs: Any) -> Any:
        out = orig(*args, **kwargs)
        st = STATE
        if st is not None and st.wd is None:
            try:
                st.start(int(mod.get_rank()), int(mod.get_group_size()))
            except Exception as exc:  # the job goes on unwatched
                print(f"msdoctor bootstrap: no rank after init(): {exc}", file=sys.stderr)
        return out

    init._msdoctor = True  # type: ignore[attr-defined]
    mod.init = init  # type: ignore[attr-defined]


_PATCHES: dict[str, Callable[[types.ModuleType], None]] = {
    "mindspore": _on_mindspore,
    "mindspore.train.model": _on_model,
    "mindspore.dataset.engine.iterators": _on_iterators,
    "mindspore.communication.management": _on_communication,
}


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the patched modules with the finders after it and wraps their loader."""

    def __init__(self, patches: dict[str, Callable[[types.ModuleType], None]]) -> None:
        self.patches = patches

    def find_spec(self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> Any:
        patch = self.patches.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, patch)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any, patch: Callable[[types.ModuleType], None]) -> None:
        self.inner = inner
        self.patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: types.ModuleType) -> None:
        self.inner.exec_module(module)
        try:
            self.patch(module)
        except Exception as exc:  # the module works unpatched
            print(f"msdoctor bootstrap: could not patch {module.__name__}: {exc}", file=sys.stderr)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, is_package… of the real loader
        return getattr(self.inner, name)


__all__ = ["install", "stack_phase", "BootWatchdog", "STATE"]
