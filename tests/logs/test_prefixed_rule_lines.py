"""A rule whose pattern holds the prefix the scanner strips (`[rank0]:[E410 … compiler_depend.ts:418] setup failed!`,
`ERROR: LeakSanitizer: …`, `error: Failed to compile BiShengLIR …`) fires in a scanned log as it does on its fixture.

The fixture test (tests/rules/test_catalogue.py) matches a `# ruleid:` line as it is; the scanner strips a plain
line's prefixes (a rank tag, a level word, a time stamp) before it matches, so a pattern written with the prefix in it
passed its fixture and missed the same line in a log (collector f, round 60: 18 fixture lines). Every such fixture
line is scanned here as a one-line log."""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import signature_set
from msdoctor.facts.logformats import strip_prefixes
from msdoctor.facts.logs import collect
from tests.rules.test_catalogue import parse_cases

FIXTURES = Path(__file__).resolve().parents[1] / "rules" / "fixtures"
SIGS = signature_set(load_catalogue())


def _prefixed_lines() -> list[tuple[str, int, str]]:
    out = []
    for f in sorted(FIXTURES.glob("*.log")):
        for kind, rid, n, line in parse_cases(f):
            if kind != "ruleid" or rid != f.stem or strip_prefixes(line)[0] == line:
                continue
            stripped = {m.rule.id for m in SIGS.match(strip_prefixes(line)[0])}
            if rid not in stripped and rid in {m.rule.id for m in SIGS.match(line)}:
                out.append((rid, n, line))
    return out


PREFIXED = _prefixed_lines()


def test_there_are_rules_written_with_the_prefix() -> None:
    assert len(PREFIXED) >= 10  # the reason for this file: without them it tests nothing


@pytest.mark.parametrize(("rid", "n", "line"), PREFIXED, ids=[f"{r}:{n}" for r, n, _l in PREFIXED])
def test_a_rule_written_with_the_prefix_fires_in_a_scanned_log(tmp_path: Path, rid: str, n: int, line: str) -> None:
    p = tmp_path / "paste.log"
    p.write_text(line + "\n", encoding="utf-8")
    _, scan = collect([str(p)])
    hits = {r for s in scan.files for r in (s.get("hits") or {})}
    assert rid in hits, (rid, n, line, sorted(hits))
