"""The watchdog injected into an unmodified job by ``msdoctor run`` (no code change in the job).

``msdoctor run`` puts ``_path/`` first on the job's ``PYTHONPATH``; its ``sitecustomize`` calls
:func:`activate` in every Python process the job starts. Only a rank starts a watchdog:

* msrun's workers (``MS_ROLE=MS_WORKER``; rank from ``RANK_ID``/``MS_NODE_ID``, world from
  ``MS_WORKER_NUM``; without a rank id — several nodes, no ``--node_rank`` — the rank is read from
  ``mindspore.communication.get_rank()`` once ``init()`` returned). Checked in MindSpore 2.10's
  ``mindspore/parallel/cluster/process_entity/_api.py``: the scheduler gets ``MS_ROLE=MS_SCHED`` and
  ``RANK_ID=0`` — it is not a rank; the launcher itself (``msrun`` / ``python -m
  mindspore.parallel.cluster.run``) has neither before it sets them for its children.
* a process launched with ``RANK_ID`` (rank-table scripts: ``RANK_ID``/``RANK_SIZE``), and a plain
  ``python train.py`` (rank 0 of 1): these start once they import MindSpore, so helper Python
  processes of a shell script stay unwatched.
* a process started by a rank (dataset workers, spawned helpers) is never a rank itself.

Then :mod:`msdoctor.watch.bootstrap.hooks` adds the watchdog callback to ``Model.train``, counts the
steps of a custom loop from its dataset iterator and records uncaught exceptions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ENV_RUN_DIR = "MSDOCTOR_RUN_DIR"  # set by `msdoctor run`: where events/ go
ENV_BOOT_PID = "MSDOCTOR_BOOT_PID"  # set by an activated rank: its children are not ranks
ENV_HEARTBEAT = "MSDOCTOR_HEARTBEAT_S"
PATH_DIR = Path(__file__).resolve().parent / "_path"  # the directory with sitecustomize.py

_LAUNCHER_MARKERS = ("mindspore.parallel.cluster.run", "parallel/cluster/run.py")


@dataclass(frozen=True)
class Identity:
    kind: str  # "rank" | "scheduler" | "launcher" | "child" | "off"
    rank: int | None = None
    world: int | None = None
    lazy: bool = False  # start once MindSpore is imported (or its rank is known after init())
    why: str = ""


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v not in (None, "") else None
    except ValueError:
        return None


def identify(env: Mapping[str, str], cmdline: Sequence[str], pid: int) -> Identity:
    """What this process is in the job, from the launcher's environment and its command line."""
    if not env.get(ENV_RUN_DIR):
        return Identity("off", why=f"{ENV_RUN_DIR} not set")
    boot = _int(env.get(ENV_BOOT_PID))
    if boot is not None and boot != pid:
        return Identity("child", why=f"started by rank process {boot}")
    role = env.get("MS_ROLE", "")
    if role == "MS_SCHED":
        return Identity("scheduler", why="MS_ROLE=MS_SCHED (msrun's scheduler process)")
    if role == "MS_WORKER":
        rank = _int(env.get("RANK_ID"))
        if rank is None:
            rank = _int(env.get("MS_NODE_ID"))
        world = _int(env.get("MS_WORKER_NUM"))
        return Identity("rank", rank, world, lazy=rank is None, why="MS_ROLE=MS_WORKER")
    if role:
        return Identity("off", why=f"MS_ROLE={role} is not a training worker")
    args = [a for a in cmdline if a]
    if any(m in a for a in args for m in _LAUNCHER_MARKERS) or any(os.path.basename(a) == "msrun" for a in args[:2]):
        return Identity("launcher", why="msrun launcher")
    rank = _int(env.get("RANK_ID"))
    if rank is not None:
        return Identity("rank", rank, _int(env.get("RANK_SIZE")), lazy=True, why="RANK_ID set by the launch script")
    return Identity("rank", 0, 1, lazy=True, why="a single process (no launcher environment)")


def cmdline() -> list[str]:
    """This process's full command line (``sys.argv`` hides the module name of ``python -m``)."""
    try:
        with open(f"/proc/{os.getpid()}/cmdline", "rb") as fh:
            return [a.decode(errors="replace") for a in fh.read().split(b"\0")]
    except OSError:
        return list(sys.argv)


def activate() -> Identity:
    """Called by the bootstrap's sitecustomize in every process of the job."""
    ident = identify(os.environ, cmdline(), os.getpid())
    if ident.kind != "rank":
        return ident
    from msdoctor.watch.bootstrap import hooks

    hooks.install(ident, Path(os.environ[ENV_RUN_DIR]))
    return ident


def job_env(base: Mapping[str, str], run_dir: Path, inject: bool = True) -> dict[str, str]:
    """The environment of a job launched by ``msdoctor run``: the bootstrap first on PYTHONPATH."""
    env = dict(base)
    env.pop(ENV_BOOT_PID, None)
    if not inject:
        return env
    env[ENV_RUN_DIR] = str(run_dir.resolve())
    # only the bootstrap's own directory: the ranks' interpreter finds msdoctor where it is installed
    # (without it the ranks run unwatched and `msdoctor run` says that no rank started a watchdog)
    parts = [str(PATH_DIR), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(PATH_DIR)]]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env
