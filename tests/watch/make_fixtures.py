"""Regenerate the facts fixtures of the live rules from real fake-loop runs.

    .venv/bin/python tests/watch/make_fixtures.py

Each ``<ID>.fire.json`` is the facts snapshot (``Facts.dumps()``) of a run of the scenario that
reproduces the fault; every ``<ID>.silent.json`` is the snapshot of the clean run. COMM201's is taken
live, while rank 1 hangs and rank 0 waits in its barrier, after the supervisor requested the stack.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from msdoctor.facts.run import collect_run  # noqa: E402
from msdoctor.watch.supervisor import SuperviseOptions, Supervisor  # noqa: E402
from tests.watch.conftest import FakeRun  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "rules" / "fixtures"
FIRE = {
    "COMM202": "crash", "COMM203": "exception", "NUM201": "nan", "NUM202": "spike", "NUM203": "underflow",
    "PAR201": "desync", "PAR202": "seed", "PERF201": "straggler", "DATA201": "datastall", "MEM201": "memleak",
}  # fmt: skip


def finished(tmp: Path, scenario: str) -> bytes:
    run = FakeRun(tmp / scenario, scenario)
    try:
        run.wait(timeout=60)
    finally:
        run.kill()
    facts, _ = collect_run(run.run_dir)
    return facts.dumps()


def live_hang(tmp: Path) -> bytes:
    run = FakeRun(tmp / "hang", "hang")
    try:
        sup = Supervisor(run.run_dir, SuperviseOptions(), write=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            sup.poll(running=True)
            if sup.collector.stack_requested and (run.run_dir / "events" / "rank_1.stack.txt").stat().st_size:
                time.sleep(0.3)
                sup.collector.poll()
                return sup.collector.facts(now=time.time(), running=True).dumps()
            time.sleep(0.3)
        raise SystemExit("the hang was not detected within 30 s")
    finally:
        run.kill()


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        clean = finished(tmp, "clean")
        for rid, scenario in FIRE.items():
            (FIXTURES / f"{rid}.fire.json").write_bytes(finished(tmp, scenario))
            (FIXTURES / f"{rid}.silent.json").write_bytes(clean)
            print(rid, scenario)
        (FIXTURES / "COMM201.fire.json").write_bytes(live_hang(tmp))
        (FIXTURES / "COMM201.silent.json").write_bytes(clean)
        print("COMM201 hang")


if __name__ == "__main__":
    main()
