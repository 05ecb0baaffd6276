"""Small real training loops for the watch tests: one process per rank, each with a real Watchdog.

Not MindSpore — numpy "parameters" and a file barrier that really blocks every rank in phase
"collective" until all ranks reached it — but the faults are real: a rank that really stops, really
sleeps, really allocates, really dies, really raises. Usage::

    python tests/watch/fakeloop.py RUN RANK WORLD SCENARIO [STEPS]
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from msdoctor.watch.watchdog import Watchdog  # noqa: E402

SCENARIOS = (
    "clean", "nan", "spike", "underflow", "desync", "seed", "straggler", "datastall", "memleak", "hang",
    "crash", "exception", "hangsync", "hangline",
)  # fmt: skip
BAD_RANK = 1
FAULT_STEP = 7


def barrier(run: Path, step: int, rank: int, world: int) -> None:
    """Every rank waits here until all ranks reached the same step (a collective, for real)."""
    d = run / "barrier"
    d.mkdir(exist_ok=True)
    timeout = float(os.environ.get("FAKE_BARRIER_TIMEOUT", "120"))
    (d / f"{step}.{rank}").touch()
    deadline = time.monotonic() + timeout
    while sum(1 for r in range(world) if (d / f"{step}.{r}").exists()) < world:
        if time.monotonic() > deadline:
            raise RuntimeError(f"barrier of step {step} timed out waiting for the other ranks")
        time.sleep(0.002)


def _framework_collective() -> Any:
    """tests/watch/fw/mindspore/collective.py, loaded by path (a real module named mindspore would shadow it)."""
    spec = importlib.util.spec_from_file_location("fake_mindspore_collective", Path(__file__).parent / "fw" / "mindspore" / "collective.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _all_there(d: Path, step: int, world: int) -> bool:
    return all((d / f"{step}.{r}").exists() for r in range(world))


def hang_here() -> None:
    while True:  # the injected hang: a rank that never reaches its collective
        time.sleep(3600)


def main(run: Path, rank: int, world: int, scenario: str, steps: int) -> None:
    wd = Watchdog(run, rank, world, heartbeat_s=0.2).start({"scenario": scenario})
    seed = 1234 + (rank if scenario == "seed" and rank == BAD_RANK else 0)
    rng = np.random.default_rng(seed)
    params = {"embed.w": rng.normal(size=(16, 8)), "ln.gamma": np.ones(8), "ln.beta": np.zeros(8)}
    wd.checksum_params(0, params)
    noise = np.random.default_rng(99 + rank)  # per-rank data: only what is all-reduced stays equal
    leak: list[bytearray] = []
    scale = 2.0**16
    bad = rank == BAD_RANK
    fw = _framework_collective()
    hold = os.environ.get("FAKE_HOLD_UNTIL")  # a test's gate: start stepping once this file exists (or 120 s)
    deadline = time.monotonic() + 120
    while hold and not Path(hold).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        for step in range(1, steps + 1):
            wd.phase("data", step)
            # healthy data wait ~1 ms against ~30 ms of compute: a loaded host's sleep overshoot must reach
            # ~12 ms on the data sleep alone to push one healthy step over DATA201's 30 % (a false early
            # onset: one such step before the fault moves it). With 10 ms of compute 3 ms did, and
            # test_fault_is_named[datastall] failed at load 10-13. The faults are 80 ms: far above that noise.
            time.sleep(0.001 + (0.08 if scenario == "datastall" and bad and step >= FAULT_STEP else 0.0))
            wd.phase("forward", step)
            if scenario == "crash" and bad and step == FAULT_STEP:
                os._exit(3)
            if scenario == "exception" and bad and step == FAULT_STEP:
                raise RuntimeError("For 'MatMulExt' op, shape1[-1] must be equal to shape2[-2], but got 8 and 6.")
            time.sleep(0.030 + (0.08 if scenario == "straggler" and bad and step >= FAULT_STEP else 0.0))
            loss = 3.0 * math.exp(-step / 40) + 0.01 * noise.normal()
            grad_norm = 1.0 + 0.05 * noise.normal()
            if scenario == "nan" and step >= FAULT_STEP:
                grad_norm = float("nan")  # all-reduced: every rank's gradient is NaN
                if bad or step > FAULT_STEP:
                    loss = float("nan")
            if scenario == "spike" and bad and step == 20:
                loss *= 6
            overflow = False
            if scenario == "underflow" and step >= FAULT_STEP:
                scale, overflow, grad_norm = scale / 2, True, 0.0
            if scenario == "hang" and bad and step == FAULT_STEP:
                hang_here()
            if scenario == "hangline" and bad and step == FAULT_STEP:
                time.sleep(1.0)  # rank 0 enters the collective (and starts stalling) a second earlier
            wd.phase("collective", step)
            if scenario == "hangsync":  # like the trainer: the hung rank is already in phase "collective"
                if bad and step == FAULT_STEP:
                    time.sleep(0.3)  # its peer entered (and stalls) first
                    hang_here()
                d = run / "barrier"
                d.mkdir(exist_ok=True)
                (d / f"{step}.{rank}").touch()
                fw.all_reduce(partial(_all_there, d, step, world), float(os.environ.get("FAKE_BARRIER_TIMEOUT", "120")))
            elif scenario == "hangline":  # the trainer's pattern: hang check, then the collective call
                if bad and step == FAULT_STEP:
                    hang_here()
                barrier(run, step, rank, world)
            else:
                barrier(run, step, rank, world)
            grad = np.full(8, 0.01)
            for name in ("ln.gamma", "ln.beta"):
                g = grad + (noise.normal(size=8) * 0.01 if scenario == "desync" and name.startswith("ln.") else 0.0)
                params[name] = params[name] - g  # desync: LayerNorm grads left out of the all-reduce
            params["embed.w"] = params["embed.w"] - 0.01
            if scenario == "memleak" and bad and step >= 3:
                leak.append(bytearray(b"\x01" * (8 << 20)))  # touched pages: real RSS growth
            wd.step(step, loss=loss, grad_norm=grad_norm, loss_scale=scale, overflow=overflow)
            if step % 5 == 0:
                wd.checksum_params(step, params)
    except Exception as exc:
        wd.exception(exc)
        wd.close("failed")
        raise SystemExit(1) from None
    wd.close("ok")


def launch(run: Path, world: int, scenario: str, steps: int) -> int:
    """Like msrun: start every rank, wait for all, exit with the first failure's status."""
    import subprocess

    procs = [subprocess.Popen([sys.executable, __file__, str(run), str(r), str(world), scenario, str(steps)]) for r in range(world)]
    while all(p.poll() is None or p.returncode == 0 for p in procs) and any(p.poll() is None for p in procs):
        time.sleep(0.2)
    failed = next((p.returncode for p in procs if p.returncode not in (None, 0)), 0)
    if failed:
        time.sleep(0.5)  # msrun notices a dead worker and tears the job down
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p in procs:
        p.wait()
    return failed


if __name__ == "__main__":
    if sys.argv[1] == "launch":
        raise SystemExit(launch(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])))
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 30)
