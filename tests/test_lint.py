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


def test_import_layers_kept():
    """The layers contract (pyproject.toml [tool.importlinter]): no module imports a layer above its own."""
    r = subprocess.run([BIN / "lint-imports"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "1 kept, 0 broken" in r.stdout


def test_import_layers_catch_a_back_edge(tmp_path):
    """The contract is not vacuous: a copy of the package where the engine imports a command fails it."""
    import os
    import shutil

    shutil.copytree(ROOT / "msdoctor", tmp_path / "msdoctor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / "msdoctor" / "engine" / "model.py").open("a") as f:
        f.write("\nfrom msdoctor.commands import ckpt as _back_edge  # noqa: E402,F401\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    r = subprocess.run([BIN / "lint-imports"], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode != 0, r.stdout[-3000:]
    assert "msdoctor.engine is not allowed to import msdoctor.commands" in r.stdout
    assert "msdoctor.engine.model -> msdoctor.commands.ckpt" in r.stdout
