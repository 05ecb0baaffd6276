"""Run every preflight collector, group by group, timing each; one failing collector never stops the others.

Groups are what ``msdoctor preflight`` prints one line for (flutter-doctor style). A collector
that raises despite the "never raise" contract (a bug) is recorded as the fact
``collector.<group>.error`` and reported; the groups after it still run. Only
:class:`~msdoctor.errors.InputError` (a file named on the command line is unreadable) propagates,
because then the user's input itself is wrong (exit 2).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msdoctor import __version__
from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError
from msdoctor.facts import ascend, env, network, ranktable, system


@dataclass(frozen=True)
class Group:
    """A line of ``msdoctor preflight``. Which rules it runs is said by the rules themselves
    (``preflight_group`` in their TOML), never listed here."""

    key: str
    title: str


GROUPS: tuple[Group, ...] = (
    Group("host", "Host"),
    Group("packages", "Python packages"),
    Group("cann", "CANN, driver and NPUs"),
    Group("env", "Launch environment"),
    Group("ranktable", "Rank table"),
    Group("network", "Network"),
)
COMPARE_GROUP = Group("compare", "Across nodes")


@dataclass
class Options:
    root: Path = Path("/")
    env_file: str | None = None
    rank_table: str | None = None
    master_port: int | None = None
    ckpt_dir: str | None = None
    run_npu_smi: bool = True
    environ: Mapping[str, str] | None = None  # the process environment unless an env file is given
    timings: dict[str, float] = field(default_factory=dict)


def launch_environment(opts: Options) -> tuple[dict[str, str], str, list[int]]:
    if opts.env_file is not None:
        values, skipped = env.read_env_file(opts.env_file)
        return values, f"--env-file {opts.env_file}", skipped
    return dict(opts.environ if opts.environ is not None else os.environ), "process environment", []


def collect(opts: Options) -> tuple[Facts, list[str]]:
    """All preflight facts, and warnings for stderr (skipped env-file lines, collector bugs)."""
    if not opts.root.is_dir():
        raise InputError(f"--root {opts.root}: not a directory")
    warnings: list[str] = []
    facts = Facts()
    t0 = time.perf_counter()
    environ, env_source, skipped = launch_environment(opts)
    if skipped:
        warnings.append(f"{opts.env_file}: skipped line(s) {', '.join(map(str, skipped))} (not KEY=VALUE)")
    root = opts.root
    plan: dict[str, list[Callable[[], Facts]]] = {
        "host": [lambda: system.collect_host(root, opts.ckpt_dir)],
        "packages": [lambda: system.collect_packages(root)],
        "cann": [lambda: ascend.collect_cann(root, environ), lambda: ascend.collect_driver(root),
                 lambda: ascend.collect_devices(root, opts.run_npu_smi)],  # fmt: skip
        "env": [lambda: env.collect_env(environ, env_source)],
        "ranktable": [lambda: ranktable.collect_ranktable(root, opts.rank_table, environ)],
        "network": [lambda: network.collect_ports(environ, opts.master_port), lambda: network.collect_firewall(root),
                    lambda: network.collect_sysctl_ports(root), lambda: network.collect_hccl_ports(root, environ)],
    }
    timings: dict[str, float] = {}
    for key, collectors in plan.items():
        start = time.perf_counter()
        for fn in collectors:
            try:
                facts.update(fn())
            except InputError:
                raise
            except Exception as exc:  # noqa: BLE001 — a collector bug must not hide the other groups
                facts.unknown(f"collector.{key}.error", f"{type(exc).__name__}: {exc}", fn.__qualname__)
                warnings.append(f"collector {key} failed: {type(exc).__name__}: {exc}")
        timings[key] = round((time.perf_counter() - start) * 1000, 2)
    facts.meta = {
        "command": "preflight",
        "msdoctor": __version__,
        "hostname": socket.gethostname(),
        "root": str(root),
        "env_source": env_source,
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "collect_ms": timings,
        "collect_total_ms": round((time.perf_counter() - t0) * 1000, 2),
    }
    return facts, warnings


def flatten(facts: Facts) -> dict[str, Any]:
    """One level of dict facts spread out (``env.vars.HCCL_CONNECT_TIMEOUT``), for comparing nodes."""
    out: dict[str, Any] = {}
    for name in facts:
        value = facts[name]
        if not facts.is_known(name):
            continue
        if isinstance(value, dict) and name in ("env.vars", "pkg.installed"):
            for k, v in value.items():
                out[f"{name}.{k}"] = v
        else:
            out[name] = value
    return out
