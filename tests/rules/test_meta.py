"""Meta-tests of the catalogue's content (sqlfluff/ruff style) and of the generated docs page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from msdoctor import docsgen
from msdoctor.engine.catalogue import Rule, load_catalogue, parse_rule
from msdoctor.engine.evaluate import SignatureSet

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = load_catalogue()
RULES = list(CATALOGUE)
SIG_RULES = [r for r in RULES if r.signatures]

# The example names a rank, device, peer or operator when it has e.g. `remote rank [5]`, `device_id=0`,
# `Device 3`, `rank5` or `For 'MatMul'`; the rule must then extract it into a named group.
# Case-sensitive on purpose: the `DEVICE(pid,…)` module prefix of MindSpore log lines names no device.
NAMES_SOMETHING = re.compile(
    r"\b(?:[Rr]ank(?:_id| id)?\s*[\[:=]?\s*\d|[Dd]evice(?:_id| id)?\s*[\[:=]?\s*\d|[Pp]eer\s*[\[:=]?\s*\d)"
    r"|remote rank|For '\w+'|operator\[\w+\]|kernel_name=\w+"
)


def example_lines(rule: Rule) -> list[str]:
    return [ln for ln in rule.example.strip().splitlines() if ln.strip() and not ln.startswith("(illustrative")]


def test_generated_docs_are_current(tmp_path: Path) -> None:
    fresh = docsgen.render(CATALOGUE)
    committed = ROOT / "docs" / "rules.md"
    assert committed.is_file(), "docs/rules.md missing: run `make docs`"
    old = committed.read_text(encoding="utf-8")
    if old != fresh:  # a short message: pytest's diff of a 5000-line page helps nobody
        n = next((i for i, (a, b) in enumerate(zip(old.splitlines(), fresh.splitlines(), strict=False), 1) if a != b), None)
        where = f"first difference at line {n}" if n else "one is a prefix of the other"
        pytest.fail(f"docs/rules.md is stale ({where}): run `make docs`", pytrace=False)
    out = tmp_path / "rules.md"
    assert docsgen.main([str(out)]) == 0 and out.read_text(encoding="utf-8") == fresh


def test_docsgen_lists_every_rule_once() -> None:
    page = docsgen.render(CATALOGUE)
    for r in RULES:
        assert page.count(f'<a id="{r.id.lower()}"></a>') == 1, r.id
        assert f"[{r.id}](#{r.id.lower()})" in page, r.id


def test_docsgen_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert docsgen.main([]) == 2
    assert "usage" in capsys.readouterr().err


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_example_is_not_trivial(rule: Rule) -> None:
    lines = example_lines(rule)
    assert lines, f"{rule.id}: example is empty"
    assert len(max(lines, key=len).strip()) >= 20, f"{rule.id}: example too short to show the real text"
    assert rule.example.strip() not in (rule.title.strip(), rule.detects.strip()), f"{rule.id}: example repeats a section"


@pytest.mark.parametrize("rule", SIG_RULES, ids=lambda r: r.id)
def test_signature_example_fires_its_rule(rule: Rule) -> None:
    """The example shown to users is a line the rule really matches (pylint-style runnable examples)."""
    sigs = SignatureSet([rule])
    assert any(sigs.match(line) for line in example_lines(rule)), f"{rule.id}: no example line matches its signatures"


@pytest.mark.parametrize("rule", SIG_RULES, ids=lambda r: r.id)
def test_signature_extracts_what_the_text_names(rule: Rule) -> None:
    if any(NAMES_SOMETHING.search(line) for line in example_lines(rule)):
        groups = {g for s in rule.signatures for g in s.groups}
        assert groups, f"{rule.id}: the example names a rank/device/peer/op but no signature has a named group"


@pytest.mark.parametrize("rule", [r for r in RULES if r.seed or r.seed_correction], ids=lambda r: r.id)
def test_seed_has_correction(rule: Rule) -> None:
    assert rule.seed and rule.seed.strip(), f"{rule.id}: seed_correction without the seed row it corrects"
    assert rule.seed_correction and len(rule.seed_correction.strip()) >= 40, f"{rule.id}: seed without a real correction"


def test_meta_checks_catch_bad_rules() -> None:
    """The checks above fail on rules that break them (so they are not vacuous)."""
    base = (ROOT / "rules" / "par" / "PAR001.toml").read_text(encoding="utf-8")
    no_groups = re.sub(r"\?P<\w+>", "", base)
    rule = parse_rule(no_groups, "PAR001.toml")
    with pytest.raises(AssertionError, match="named group"):
        test_signature_extracts_what_the_text_names(rule)
    no_correction = re.sub(r"seed_correction = '''.*?'''\n", "", base, flags=re.S)
    with pytest.raises(AssertionError, match="without a real correction"):
        test_seed_has_correction(parse_rule(no_correction, "PAR001.toml"))
    trivial = re.sub(r"example = '''.*?'''", "example = '''\nerror\n'''", base, flags=re.S)
    with pytest.raises(AssertionError, match="too short"):
        test_example_is_not_trivial(parse_rule(trivial, "PAR001.toml"))


# -- rule lifecycle: a rule id is never reused (ruff's habit) ----------------------------------------


def _git(*args: str) -> str | None:
    import subprocess

    try:
        proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def id_violations(ever: set[str], ever_retired: set[str], active: set[str], retired: set[str]) -> list[str]:
    """What breaks the lifecycle: an id that was ever issued but has no file now (its tombstone was
    deleted, so it could be issued again), and a retired id brought back to life."""
    out = [f"{rid}: issued once, now neither a rule nor a tombstone (retire it, never delete it)"
           for rid in sorted(ever - active - retired)]  # fmt: skip
    out += [f"{rid}: retired once, active again (a retired id is never reused)" for rid in sorted(ever_retired & active)]
    return out


def test_retired_ids_are_never_reused() -> None:
    added = _git("log", "--format=", "--name-only", "--diff-filter=A", "--", "rules")
    if added is None:
        pytest.skip("not a git checkout: the rule history is not available")
    ever = {Path(p).stem for p in added.split() if re.fullmatch(r"rules/\w+/[A-Z]+\d{3,4}\.toml", p)}
    ever_retired: set[str] = set()
    for commit in (_git("log", "--format=%H", "-G", '^status = "retired"', "--", "rules") or "").split():
        for path in (_git("show", "--format=", "--name-only", commit, "--", "rules") or "").split():
            text = _git("show", f"{commit}:{path}") or ""
            if re.search(r'^status = "retired"', text, re.M):
                ever_retired.add(Path(path).stem)
    active = {r.id for r in CATALOGUE}
    retired = {t.id for t in CATALOGUE.tombstones}
    assert ever, "no rule file in the git history: the check would be vacuous"
    assert not id_violations(ever, ever_retired, active, retired)


def test_id_lifecycle_check_is_not_vacuous() -> None:
    assert id_violations({"ENV101", "ENV997"}, set(), {"ENV101"}, set()) == [
        "ENV997: issued once, now neither a rule nor a tombstone (retire it, never delete it)"
    ]
    assert id_violations({"ENV997"}, {"ENV997"}, {"ENV997"}, set()) == [
        "ENV997: retired once, active again (a retired id is never reused)"
    ]
    assert not id_violations({"ENV997"}, {"ENV997"}, set(), {"ENV997"})
