"""End-to-end runs of the real trainer under msrun, shared between test modules.

A 2-rank CPU run costs tens of seconds, so each scenario runs once per session: every test that
asks for the same scenario (trainer tests assert the real symptom, watch tests assert the finding)
gets the same run directory and CLI result.
"""

from __future__ import annotations

import pytest

from tests.conftest import CliResult, run_cli

# name -> arguments of `msdoctor train` (after --run-dir). Filled by the trainer's tests and reused by
# the watch tests; keep them short: every entry is a real 2-rank msrun job on 2 CPU cores.
SCENARIOS: dict[str, list[str]] = {}


@pytest.fixture(scope="session")
def train_run(tmp_path_factory):
    cache: dict[str, tuple[object, CliResult]] = {}

    def run(name: str, timeout: float = 420):
        if name not in cache:
            run_dir = tmp_path_factory.mktemp(f"run-{name}")
            result = run_cli("train", "--run-dir", str(run_dir), *SCENARIOS[name], timeout=timeout)
            cache[name] = (run_dir, result)
        return cache[name]

    return run
