"""Shared helpers for the `msdoctor logs` tests: the synthetic cluster generator, the scanning spec, and a pasted
text run through `msdoctor logs --json`."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "logs"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cluster", SAMPLES / "gen_cluster.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def gen_cluster() -> ModuleType:
    return load_generator()


@pytest.fixture(scope="session")
def spec():  # noqa: ANN201
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.logscan import ScanSpec

    return ScanSpec(signature_set(load_catalogue()))


def paste_report(tmp_path: Path, text: str) -> dict:
    """`msdoctor logs --json` on ``text`` written as one pasted file: the whole report."""
    from tests.conftest import run_cli

    p = tmp_path / "paste.log"
    p.write_text(text, encoding="utf-8")
    return run_cli("logs", "--json", str(p)).json()


def paste_root_cause(tmp_path: Path, text: str) -> dict:
    """The report's ``root_cause`` for ``text`` pasted as one file."""
    return paste_report(tmp_path, text)["root_cause"]
