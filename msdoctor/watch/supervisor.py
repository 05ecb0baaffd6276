"""The supervisor outside the ranks: waits on the launched job while watching its event streams.

``supervise`` is what ``msdoctor train`` calls around msrun and ``msdoctor watch`` calls for a run
started elsewhere (``proc`` is None then).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class SuperviseOptions:
    poll_s: float = 0.5
    timeout_s: float | None = None  # kill the job after this long (None: wait for it)
    on_finding: str | None = None  # shell command fed each finding as JSON on stdin
    extra: dict[str, object] = field(default_factory=dict)


def supervise(run_dir: Path, proc: subprocess.Popen[bytes] | None, world: int, opts: SuperviseOptions) -> int:
    """Wait for the job; returns its exit status (or 124 when ``timeout_s`` ran out and it was killed)."""
    start = time.monotonic()
    while proc is not None and proc.poll() is None:
        if opts.timeout_s is not None and time.monotonic() - start > opts.timeout_s:
            proc.kill()
            proc.wait()
            return 124
        time.sleep(opts.poll_s)
    return 0 if proc is None else int(proc.returncode)
