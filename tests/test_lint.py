"""ruff and mypy are part of the suite, so CI fails on what `make lint` would report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_ruff_clean():
    r = subprocess.run([BIN / "ruff", "check", "msdoctor", "tests", "trainer", "bench", "samples"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:]


def test_mypy_clean_on_the_package():
    r = subprocess.run([BIN / "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
