"""`Cannot copy out of meta tensor; no data!` (CKPT068, a lazily loaded weight) yields to a rule that reads the shard
layout in the same line: FSDP2 leaving a rank an empty shard (PAR050, pytorch#164554's title, a round-75 holdout:
tests/realworld/holdout/pytorch-164554-…/title.log). Alone, the message stays CKPT068's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
TITLE = next((ROOT / "tests/realworld/holdout").glob("pytorch-164554-*")) / "title.log"


@pytest.mark.parametrize(("text", "rule"), [
    (TITLE.read_text(encoding="utf-8"), "PAR050"),
    ("NotImplementedError: Cannot copy out of meta tensor; no data!\n", "CKPT068"),
])
def test_the_layout_heads_over_the_meta_tensor(tmp_path: Path, text: str, rule: str) -> None:
    f = tmp_path / "paste.log"
    f.write_text(text, encoding="utf-8")
    r = run_cli("logs", str(f))
    assert f"({rule})" in r.out.splitlines()[1], r.out
