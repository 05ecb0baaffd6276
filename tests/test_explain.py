"""`msdoctor explain` on a retired rule id says it is retired and what replaces it (never "no rule")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from msdoctor.cli import main
from msdoctor.commands import explain
from msdoctor.engine.catalogue import load_from, rules_root

TOMBSTONE = """
id = "ENV997"
area = "ENV"
status = "retired"
title = "An old rule"
retired = "2026-12-01: merged into ENV108"
replaced_by = "ENV108"
"""
BARE_TOMBSTONE = """
id = "ENV996"
area = "ENV"
status = "retired"
title = "Another old rule"
retired = "2026-12-01: the check could not tell a fault from a healthy run"
"""


@pytest.fixture
def with_tombstones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "rules"
    shutil.copytree(rules_root(), root, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    (root / "env" / "ENV997.toml").write_text(TOMBSTONE, encoding="utf-8")
    (root / "env" / "ENV996.toml").write_text(BARE_TOMBSTONE, encoding="utf-8")
    catalogue = load_from(root)
    monkeypatch.setattr(explain, "load_catalogue", lambda: catalogue)


def test_retired_id_is_explained_with_its_replacement(with_tombstones, capsys) -> None:
    assert main(["explain", "env997"]) == 0
    out, err = capsys.readouterr()
    assert "ENV997 is retired" in out and "merged into ENV108" in out
    assert "Replaced by ENV108" in out and "msdoctor explain ENV108" in out
    assert "no rule" not in out + err


def test_retired_id_without_replacement_says_so(with_tombstones, capsys) -> None:
    assert main(["explain", "ENV996"]) == 0
    out, _ = capsys.readouterr()
    assert "ENV996 is retired" in out and "No rule replaces it" in out


def test_retired_id_as_json(with_tombstones, capsys) -> None:
    assert main(["explain", "ENV997", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rule"] == {"id": "ENV997", "status": "retired", "title": "An old rule",
                           "retired": "2026-12-01: merged into ENV108", "replaced_by": "ENV108"}  # fmt: skip


def test_unknown_id_is_still_an_input_error(with_tombstones, capsys) -> None:
    assert main(["explain", "ENV000"]) == 2
    assert "no rule 'ENV000'" in capsys.readouterr().err
