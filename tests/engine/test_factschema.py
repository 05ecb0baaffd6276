"""Facts snapshots are validated on load against the shapes the real collectors write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msdoctor.engine.facts import Facts
from msdoctor.engine.factschema import check, learn, validate
from msdoctor.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "rules" / "fixtures"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.name)
def test_every_fixture_fits_the_schema(path: Path) -> None:
    """A fixture that does not fit means the schema is stale: `python -m msdoctor.schemagen --write`."""
    Facts.load(path)


def test_a_list_where_a_record_belongs_names_the_fact(tmp_path: Path) -> None:
    snap = json.loads((FIXTURES / "COMM501.fire.json").read_text())
    name = next(n for n, e in snap["facts"].items() if isinstance(e.get("value"), list) and e["value"])
    snap["facts"][name]["value"] = [["not", "a", "record"]]
    f = tmp_path / "facts.json"
    f.write_text(json.dumps(snap))
    with pytest.raises(InputError, match=rf"fact {name}\[0\]: expected"):
        Facts.load(f)


def test_wrong_scalar_kind_is_named_with_its_path() -> None:
    shape = learn([{"file": "a", "lines": 3}])
    assert check([{"file": "a", "lines": "three"}], shape, "logs.files") == (
        "logs.files[0].lines: expected a number, got str 'three'")
    assert check([{"file": "a", "lines": 2, "new_key": {}}], shape, "logs.files") is None


def test_null_only_where_a_real_snapshot_had_one() -> None:
    shape = learn([{"rank": None}, {"rank": 1}])
    assert check([{"rank": None}], shape, "f") is None
    assert check([None], shape, "f") == "f[0]: expected a mapping, got null 'None'"


def test_unknown_fact_is_accepted() -> None:
    assert validate("some.future.fact", {"x": [1]}) is None


def test_meta_must_be_an_object(tmp_path: Path) -> None:
    f = tmp_path / "facts.json"
    f.write_text(json.dumps({"format": "msdoctor-facts/1", "meta": 1, "facts": {}}))
    with pytest.raises(InputError, match="'meta' must be an object"):
        Facts.load(f)


def test_the_generated_schema_does_not_depend_on_the_shell_that_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """preflight keeps the launch variables of its own environment: a developer's PYTHONPATH or HCCL_* exported in the
    shell that runs `python -m msdoctor.schemagen --write` once became keys of the shipped schema (round 59)."""
    from msdoctor import schemagen

    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.setenv("HCCL_MSDOCTOR_SCHEMAGEN_TEST", "1")
    text = json.dumps(schemagen.build(root), indent=1, sort_keys=True, default=str)
    assert "HCCL_MSDOCTOR_SCHEMAGEN_TEST" not in text and "PYTHONPATH" not in text
