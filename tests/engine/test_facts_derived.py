"""Facts.derived: a value several check rules read is computed once per state of the facts."""

from __future__ import annotations

from msdoctor.checks import logs as logchecks
from msdoctor.engine.facts import Facts


def test_derived_is_computed_once_and_forgotten_on_change() -> None:
    facts = Facts({"a": 1})
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return facts["a"] * 10

    assert facts.derived("x", compute) == 10
    assert facts.derived("x", compute) == 10
    assert len(calls) == 1
    facts.set("a", 2)
    assert facts.derived("x", compute) == 20
    facts.update(Facts({"a": 3}))
    assert facts.derived("x", compute) == 30
    assert len(calls) == 3
    assert set(facts.to_json()["facts"]) == {"a"}  # a derivation is not a fact of the snapshot


def test_fallback_is_classified_once_for_all_areas(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every area's X099 and X097 read one classification of the first unrecognised error, not one each."""
    event = {"role": "unclassified", "text": "RuntimeError: something nobody catalogued failed", "file": "a.log",
             "line": 3, "severity": "error"}  # fmt: skip
    facts = Facts({"logs.hits": [], "logs.ranks": {}, "logs.launcher": {"events": [event]}})
    calls: list[int] = []
    real = logchecks.classify_first

    def counting(f: Facts):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(f)

    monkeypatch.setattr(logchecks, "classify_first", counting)
    for area in ("COMM", "MEM", "NUM", "ENV", "PAR", "DATA", "CKPT"):
        list(logchecks.error_family(facts, {"area": area}))
        list(logchecks.wording_guess(facts, {"area": area}))
    assert len(calls) == 1
