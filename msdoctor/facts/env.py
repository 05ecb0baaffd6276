"""Launch-environment facts: the variables HCCL, CANN, msrun and MindSpore read.

The environment is the process's own, or a ``KEY=VALUE`` file (``--env-file``) describing the
launch environment of a job (what each rank will see). Only the variables that matter are kept,
so a facts snapshot never carries unrelated secrets from the shell.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError

# Prefixes and names preflight reads; everything else in the environment is dropped.
PREFIXES = ("HCCL_", "MS_", "ASCEND_", "GLOG_", "MINDSPORE_")
NAMES = (
    "DEVICE_ID", "RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "LOCAL_RANK_SIZE", "SERVER_ID",
    "LD_LIBRARY_PATH", "PYTHONPATH", "PATH", "TOOLCHAIN_HOME", "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
    "OMP_NUM_THREADS", "LD_PRELOAD",
)  # fmt: skip
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$")


def relevant(name: str) -> bool:
    return name in NAMES or name.startswith(PREFIXES)


def parse_env_text(text: str) -> tuple[dict[str, str], list[int]]:
    """``KEY=VALUE`` lines (``export`` and shell quoting allowed) → variables, skipped line numbers."""
    values: dict[str, str] = {}
    skipped: list[int] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            skipped.append(n)
            continue
        raw = m.group(2).strip()
        try:
            parts = shlex.split(raw, comments=True)
        except ValueError:
            skipped.append(n)
            continue
        values[m.group(1)] = " ".join(parts) if parts else ""
    return values, skipped


def read_env_file(path: str | Path) -> tuple[dict[str, str], list[int]]:
    """An env file named on the command line: unreadable or binary → :class:`InputError` (exit 2)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such env file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory, expected KEY=VALUE lines") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    if b"\x00" in data:
        raise InputError(f"{p}: binary data, expected KEY=VALUE lines")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text, expected KEY=VALUE lines") from None
    values, skipped = parse_env_text(text)
    if not values and text.strip():
        raise InputError(f"{p}: no KEY=VALUE line found")
    return values, skipped


def collect_env(environ: Mapping[str, str], source: str) -> Facts:
    """``env.vars``: the relevant variables and where they came from (process or a file)."""
    facts = Facts()
    kept = {k: v for k, v in sorted(environ.items()) if relevant(k)}
    facts.set("env.vars", kept, source)
    facts.set("env.source", source, source)
    return facts
