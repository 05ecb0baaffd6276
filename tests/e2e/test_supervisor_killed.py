"""`msdoctor train` killed with SIGKILL leaves no orphaned ranks and a run directory `report` reads.

Before, msrun and both ranks ran on (each worker in its own process group) and run.json said
"running" forever.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _rank_pids(run: Path) -> dict[int, int]:
    out = {}
    for r in (0, 1):
        p = run / "events" / f"rank_{r}.jsonl"
        if p.exists():
            for raw in p.read_bytes().splitlines():
                ev = orjson.loads(raw) if raw.strip().endswith(b"}") else {}
                if ev.get("kind") == "start":
                    out[r] = ev["pid"]
    return out


def test_sigkill_of_train_leaves_no_rank_running(tmp_path):
    run = tmp_path / "run"
    # a hang keeps both ranks alive (rank 0 would wait 120 s in its collective)
    train = subprocess.Popen([sys.executable, "-m", "msdoctor", "train", "--workers", "2", "--steps", "6",
                              "--collective-timeout", "120", "--inject", "hang:rank=1,step=2", "--run-dir", str(run)],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(pids) < 2:
            time.sleep(0.5)
            pids = _rank_pids(run)
        assert len(pids) == 2, "the ranks never started"
        train.send_signal(signal.SIGKILL)
        train.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in pids.values()):
            time.sleep(0.2)
        assert [r for r, p in pids.items() if _alive(p)] == []
    finally:
        for p in pids.values():
            if _alive(p):
                os.kill(p, signal.SIGKILL)
        if train.poll() is None:
            train.kill()
    deadline = time.monotonic() + 30  # the reaper records it once the processes it killed are reaped
    while time.monotonic() < deadline and orjson.loads((run / "run.json").read_bytes())["status"] == "running":
        time.sleep(0.2)
    meta = orjson.loads((run / "run.json").read_bytes())
    assert meta["status"] == "supervisor died"
    rep = run_cli("report", str(run), "--json")
    assert rep.rc in (0, 1), rep.err
    assert not any(f["rule"] == "COMM202" for f in rep.json()["findings"])  # killed by us, not crashed
