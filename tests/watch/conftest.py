"""Runs of the fake loops (tests/watch/fakeloop.py): real processes, real Watchdogs, real faults."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

FAKE = Path(__file__).with_name("fakeloop.py")


class FakeRun:
    def __init__(self, run_dir: Path, scenario: str, world: int = 2, steps: int = 30) -> None:
        self.run_dir, self.scenario, self.world = run_dir, scenario, world
        env = dict(os.environ, FAKE_BARRIER_TIMEOUT="3")
        self.procs = [
            subprocess.Popen([sys.executable, str(FAKE), str(run_dir), str(r), str(world), scenario, str(steps)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            for r in range(world)
        ]

    def wait(self, timeout: float = 60) -> list[int]:
        deadline = time.monotonic() + timeout
        for p in self.procs:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        return [p.returncode for p in self.procs]

    def kill(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.fixture
def fake_run(tmp_path):
    started: list[FakeRun] = []

    def start(scenario: str, world: int = 2, steps: int = 30) -> FakeRun:
        run = FakeRun(tmp_path / f"run-{scenario}-{len(started)}", scenario, world, steps)
        started.append(run)
        return run

    yield start
    for run in started:
        run.kill()


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    """A finished run per scenario, shared by the tests of one session (each costs ~1–2 s)."""
    cache: dict[str, Path] = {}

    def get(scenario: str) -> Path:
        if scenario not in cache:
            run = FakeRun(tmp_path_factory.mktemp(f"fake-{scenario}"), scenario)
            try:
                run.wait(timeout=60)
            finally:
                run.kill()
            cache[scenario] = run.run_dir
        return cache[scenario]

    return get
