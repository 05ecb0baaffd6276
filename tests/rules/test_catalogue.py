"""One parametrised runner over every rule's fixtures, and a meta-test of the catalogue itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from msdoctor.engine.catalogue import AREAS, load_catalogue
from msdoctor.engine.evaluate import SignatureSet, resolve_check, run_checks
from msdoctor.engine.facts import Facts

FIXTURES = Path(__file__).parent / "fixtures"
CATALOGUE = load_catalogue()
SIG_RULES = CATALOGUE.select(kind="signature")
CHECK_RULES = CATALOGUE.select(kind="check")
MARK = re.compile(r"^#\s*(ruleid|ok):\s*([A-Z]+\d{3,4})\s*$")


def parse_cases(path: Path) -> list[tuple[str, str, int, str]]:
    """semgrep-style: `# ruleid: X` / `# ok: X` mark the next line of the fixture."""
    cases, pending = [], None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = MARK.match(line)
        if m:
            pending = m.groups()
            continue
        if pending:
            cases.append((pending[0], pending[1], n, line))
            pending = None
    return cases


SIGS = SignatureSet(SIG_RULES)


@pytest.mark.parametrize("rule", SIG_RULES, ids=lambda r: r.id)
def test_signature_fixture(rule):
    path = FIXTURES / f"{rule.id}.log"
    assert path.is_file(), f"{rule.id}: no fixture {path.name}"
    cases = [c for c in parse_cases(path) if c[1] == rule.id]
    kinds = {c[0] for c in cases}
    assert kinds == {"ruleid", "ok"}, f"{rule.id}: fixture needs both a `# ruleid:` and an `# ok:` line"
    for kind, rid, n, line in cases:
        fired = {m.rule.id for m in SIGS.match(line)}
        if kind == "ruleid":
            assert rid in fired, f"{path.name}:{n} should fire {rid}: {line!r}"
        else:
            assert rid not in fired, f"{path.name}:{n} must not fire {rid}: {line!r}"


@pytest.mark.parametrize("rule", CHECK_RULES, ids=lambda r: r.id)
def test_check_fixture(rule):
    fire, silent = FIXTURES / f"{rule.id}.fire.json", FIXTURES / f"{rule.id}.silent.json"
    assert fire.is_file() and silent.is_file(), f"{rule.id}: needs {fire.name} and {silent.name}"
    ev = run_checks([rule], Facts.load(fire))
    assert [f.rule for f in ev.findings] and {f.rule for f in ev.findings} == {rule.id}, ev.not_evaluated
    for f in ev.findings:
        assert f.message and f.evidence, f"{rule.id}: a finding needs a message and evidence"
    ev = run_checks([rule], Facts.load(silent))
    assert not ev.findings, f"{rule.id}: silent fixture fired: {[f.message for f in ev.findings]}"
    assert not ev.not_evaluated, f"{rule.id}: silent fixture must be evaluated, got {ev.not_evaluated}"


@pytest.mark.parametrize("rule", list(CATALOGUE), ids=lambda r: r.id)
def test_rule_document_complete(rule):
    for name in ("title", "detects", "cause", "confirm", "fix", "example"):
        assert len(getattr(rule, name).strip()) >= 10, f"{rule.id}: section {name!r} is too thin"
    assert rule.references
    if rule.check:
        resolve_check(rule.check)  # raises when the named function does not exist


def test_catalogue_size_and_areas():
    assert len(CATALOGUE) >= 45, f"only {len(CATALOGUE)} rules"
    assert {r.area for r in CATALOGUE} == set(AREAS)
