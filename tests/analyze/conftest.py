from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "samples" / "profiles"
sys.path.insert(0, str(PROFILES))

import gen_profile as gp  # noqa: E402


@pytest.fixture(scope="session")
def make_tree(tmp_path_factory):
    """make_tree(name, **Config fields) → a generated profiling tree (cached per name)."""
    cache: dict[str, Path] = {}

    def make(name: str, **kw) -> Path:
        if name not in cache:
            root = tmp_path_factory.mktemp(name)
            gp.generate(root, gp.Config(**kw))
            cache[name] = root
        return cache[name]

    return make


@pytest.fixture(scope="session")
def problems_tree(make_tree):
    return make_tree(
        "problems", ranks=8, pp=2, steps=4, kernels=16, slow_rank=2, slow_link=(4, 5),
        stage_imbalance=(1, 1.4), spike_steps=[3],
    )  # fmt: skip
