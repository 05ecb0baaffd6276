"""The hang evidence quotes the collective time-out the waiting rank's backend really uses.

Before, a CPU job's evidence said "HCCL_EXEC_TIMEOUT, 1836 s by default on Ascend" — a time-out the
job does not have (MindSpore's CPU collectives read MS_CPU_COMM_OP_TIMEOUT, else MS_NODE_TIMEOUT,
else 30 s).
"""

from __future__ import annotations

import orjson
import pytest

from msdoctor import rundir
from msdoctor.facts.run import collective_timeout
from msdoctor.watch.report import diagnose_dir


def _write(run, rank, evs):
    path = rundir.rank_file(run, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(dict(e, rank=rank)) + b"\n" for e in evs))


def _hung_run(run, device_target, comm_env):
    for r in (0, 1):
        evs = [{"t": 0.0, "kind": "start", "world": 2, "host": "elsewhere", "heartbeat_s": 1.0,
                "device_target": device_target, "comm_env": comm_env}]
        evs += [{"t": float(s), "kind": "step", "step": s, "step_time": 1.0, "loss": 1.0} for s in (1, 2, 3)]
        # rank 0 reaches the collective of step 4; rank 1 stays in its data phase
        evs.append({"t": 3.5, "kind": "phase", "step": 4, "phase": "collective" if r == 0 else "data"})
        evs += [{"t": 3.5 + i, "kind": "heartbeat", "step": 3, "phase": "collective" if r == 0 else "data",
                 "phase_step": 4, "where": "x.py:1 f"} for i in range(1, 30)]
        _write(run, r, evs)


@pytest.mark.parametrize(("target", "env", "words"), [
    ("CPU", {"MS_CPU_COMM_OP_TIMEOUT": "8", "MS_NODE_TIMEOUT": "8"}, "MS_CPU_COMM_OP_TIMEOUT=8: 8.0 s, CPU"),
    ("CPU", {}, "MindSpore's CPU default: 30.0 s, CPU"),
    ("Ascend", {}, "HCCL_EXEC_TIMEOUT, CANN's default: 1836.0 s, Ascend"),
])
def test_hang_evidence_quotes_the_backends_timeout(tmp_path, target, env, words):
    _hung_run(tmp_path, target, env)
    hang = next(f for f in diagnose_dir(tmp_path).findings if f.rule == "COMM201")
    waits = [str(e) for e in hang.evidence if "rank 0 waits" in str(e)]
    assert waits and words in waits[0], waits
    if target == "CPU":
        assert "HCCL" not in waits[0] and "1836" not in waits[0]


def test_collective_timeout_precedence():
    assert collective_timeout("CPU", {"MS_NODE_TIMEOUT": "12"})["seconds"] == 12.0
    assert collective_timeout("CPU", {"MS_NODE_TIMEOUT": "12", "MS_CPU_COMM_OP_TIMEOUT": "7"})["seconds"] == 7.0
    assert collective_timeout("Ascend", {"HCCL_EXEC_TIMEOUT": "600"})["seconds"] == 600.0
    assert collective_timeout(None, {})["seconds"] is None


def test_the_watchdog_records_backend_and_timeout_env(tmp_path, monkeypatch):
    from msdoctor.watch.watchdog import Watchdog

    monkeypatch.setenv("MS_CPU_COMM_OP_TIMEOUT", "9")
    wd = Watchdog(tmp_path, 0, heartbeat_s=10).start()
    wd.close()
    start = orjson.loads(rundir.rank_file(tmp_path, 0).read_bytes().splitlines()[0])
    assert start["comm_env"]["MS_CPU_COMM_OP_TIMEOUT"] == "9" and "device_target" in start
