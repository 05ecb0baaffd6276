"""The live path: one JSONL event stream per rank, ``RUN/events/rank_<r>.jsonl``.

The watchdog appends, the supervisor / TUI / report tail the same files by byte offset, so live
and post-mortem diagnosis share one parser. Every event is one JSON object with at least
``t`` (unix seconds), ``rank`` and ``kind``:

==============  =====================================================================================
kind            fields
==============  =====================================================================================
``start``       world, pid, host, main_thread (hex id, as faulthandler prints it), heartbeat_s, argv,
                config (free-form dict)
``step``        step, loss, grad_norm, loss_scale, overflow, step_time, data_wait, phases {phase: s},
                rss, device_mem, … (any extra metric the loop passes)
``heartbeat``   step (last completed), phase, phase_step, where / where_user ("file:line func" of the
                main thread's innermost frame / innermost frame outside libraries), since, rss
``phase``       step, phase (e.g. "data", "forward", "collective", "save")
``checksum``    step, sums {parameter name: [sum, sum of squares]}
``exception``   step (in progress), phase, type, message, traceback
``watchdog_error``  where, error (the watchdog's own contained failure)
``end``         step, status ("ok" | "failed"), watchdog_errors
==============  =====================================================================================

JSON has no NaN/Inf: non-finite metrics are written as the strings "NaN", "Infinity", "-Infinity".
A SIGUSR1 makes the rank's faulthandler append every thread's stack to ``rank_<r>.stack.txt``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

EVENTS_DIR = "events"


def events_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / EVENTS_DIR


def rank_file(run_dir: str | Path, rank: int) -> Path:
    return events_dir(run_dir) / f"rank_{rank}.jsonl"


def stack_file(run_dir: str | Path, rank: int) -> Path:
    return events_dir(run_dir) / f"rank_{rank}.stack.txt"


def dumps_event(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS) + b"\n"


@dataclass
class Tail:
    """Reads the complete lines appended to one file since the last call (toolong-style, by offset)."""

    path: Path
    offset: int = 0
    skipped: int = 0  # lines that were not valid JSON objects

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        out = []
        for raw in data[: end + 1].splitlines():
            if not raw.strip():
                continue
            try:
                ev = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self.skipped += 1
                continue
            if isinstance(ev, dict):
                out.append(ev)
            else:
                self.skipped += 1
        return out


def rank_files(run_dir: str | Path) -> dict[int, Path]:
    out: dict[int, Path] = {}
    d = events_dir(run_dir)
    if not d.is_dir():
        return out
    for p in d.glob("rank_*.jsonl"):
        try:
            out[int(p.stem.split("_", 1)[1])] = p
        except ValueError:
            continue
    return dict(sorted(out.items()))


def read_all(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every event of every rank (post-mortem)."""
    for _, path in rank_files(run_dir).items():
        yield from Tail(path).read()


def append(path: Path, event: dict[str, Any]) -> None:
    """Append one event with a single write() so lines of concurrent writers never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, dumps_event(event))
    finally:
        os.close(fd)
