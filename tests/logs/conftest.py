"""Shared helpers for the `msdoctor logs` tests: the synthetic cluster generator and scanning spec."""

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
