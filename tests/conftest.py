from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

# `make test` runs `.venv/bin/python -m pytest` without activating the venv. msrun (a console script of
# MindSpore) and the `python` it starts its workers with must be the venv's, as for a user who activated
# it: the tests of `msdoctor run -- msrun …` launch exactly that command line.
_BIN = str(Path(sys.executable).parent)
if os.environ.get("PATH", "").split(os.pathsep)[0] != _BIN:
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")


# msdoctor keeps what it computes from its rules (and the trainer its MindRecord data) under the user's cache folder
# (msdoctor/cache.py): the suite keeps its own, shared by its workers and the subprocesses they start.
os.environ.setdefault("MSDOCTOR_CACHE", str(ROOT / "build" / "test-cache"))


class CliResult:
    def __init__(self, rc: int, out: str, err: str) -> None:
        self.rc, self.out, self.err = rc, out, err

    def json(self):  # noqa: ANN201
        import orjson

        return orjson.loads(self.out)


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300) -> CliResult:
    """Run `msdoctor ARGS` as a user would: a subprocess, stdout and stderr kept apart."""
    proc = subprocess.run(
        [sys.executable, "-m", "msdoctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=env,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli():
    return run_cli


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the group marker into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test`: -n 2 --dist loadgroup) the tests that run real 2-rank msrun jobs (marked
    e2e) form one group on one worker: two jobs at once on 2 cores would starve each other's ranks past the
    timing margins the tests keep, and tests/e2e/conftest.py's per-session cache of runs serves one worker."""
    for item in items:
        if item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.xdist_group("e2e"))
