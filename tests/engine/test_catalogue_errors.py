"""A malformed rule file is reported with its path and field, never a traceback."""

from __future__ import annotations

import pytest

from msdoctor.engine.catalogue import load_catalogue, load_from, parse_rule
from msdoctor.engine.evaluate import SignatureSet
from msdoctor.errors import CatalogueError
from msdoctor.facts.logstate import ScanSpec

GOOD = """
id = "COMM999"
title = "t t t t t t"
severity = "error"
area = "COMM"
detects = "detects something"
cause = "a cause of it"
confirm = "how to confirm"
fix = "how to fix it"
example = "an example line"
references = ["somewhere"]
[[signatures]]
pattern = 'abc(?P<rank>\\d+)'
"""


def test_good_rule_parses():
    r = parse_rule(GOOD, "x.toml")
    assert r.kind == "signature" and r.signatures[0].groups == ("rank",) and r.source == "log"


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda s: s.replace('severity = "error"', 'severity = "fatal"'), "severity"),
        (lambda s: s.replace('fix = "how to fix it"\n', ""), "fix"),
        (lambda s: s.replace('id = "COMM999"', 'id = "comm9"'), "id"),
        (lambda s: s.replace('id = "COMM999"', 'id = "COMM0999"'), "id"),
        (lambda s: s.replace('id = "COMM999"', 'id = "COMM10000"'), "id"),
        (lambda s: s.replace('area = "COMM"', 'area = "NET"'), "area"),
        (lambda s: 'bogus = 1\n' + s, "bogus"),
        (lambda s: 'check = "env.x"\n' + s, "check"),
        (lambda s: s + 'colour = "red"\n', "signatures[0].colour"),
        (lambda s: s.replace("title =", "title = = "), "TOML"),
        (lambda s: 'other_causes = 3\n' + s, "other_causes"),
        (lambda s: 'other_causes = "too short"\n' + s, "other_causes"),
    ],
)
def test_malformed_rule_names_path_and_field(mutate, field):
    with pytest.raises(CatalogueError) as err:
        parse_rule(mutate(GOOD), "rules/comm/COMM999.toml")
    assert "rules/comm/COMM999.toml" in str(err.value) and field in str(err.value)


def test_a_four_digit_id_parses_and_follows_999(tmp_path):
    """ENV issued all of 001–999 by round 77: the next ids have four digits, ordered by number, not as strings."""
    (tmp_path / "comm").mkdir()
    for rid in ("COMM999", "COMM1000", "COMM100", "COMM101"):
        (tmp_path / "comm" / f"{rid}.toml").write_text(GOOD.replace("COMM999", rid))
    assert [r.id for r in load_from(tmp_path)] == ["COMM100", "COMM101", "COMM999", "COMM1000"]


def test_bad_file_in_catalogue_folder(tmp_path):
    (tmp_path / "comm").mkdir()
    (tmp_path / "comm" / "COMM999.toml").write_text(GOOD.replace('fix = "how to fix it"\n', ""))
    with pytest.raises(CatalogueError, match="COMM999.toml: missing field 'fix'"):
        load_from(tmp_path)


def test_bad_catalogue_via_cli_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "comm").mkdir()
    (tmp_path / "comm" / "COMM999.toml").write_text(GOOD.replace('severity = "error"', 'severity = "bad"'))
    import msdoctor.engine.catalogue as cat
    from msdoctor.cli import main

    cat.load_catalogue.cache_clear()
    monkeypatch.setattr(cat, "rules_root", lambda: tmp_path)
    rc = main(["rules"])
    cat.load_catalogue.cache_clear()
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "field 'severity'" in err and "Traceback" not in err


def test_a_pattern_that_does_not_compile_names_its_file_when_first_used():
    """Patterns compile on first use (a paste runs the few whose anchor it holds; compiling all ~1270 was half
    of loading the catalogue): the error still names the file and field."""
    r = parse_rule(GOOD.replace("abc(?P<rank>", "abc(?P<rank"), "rules/comm/COMM999.toml")
    with pytest.raises(CatalogueError) as err:
        r.signatures[0].regex  # noqa: B018
    assert "rules/comm/COMM999.toml" in str(err.value) and "signatures[0].pattern" in str(err.value)
    from msdoctor.engine.evaluate import SignatureSet

    with pytest.raises(CatalogueError, match="does not compile"):
        SignatureSet([r]).match("abc12")


def test_every_shipped_pattern_compiles():
    from msdoctor.engine.catalogue import load_catalogue

    bad, n = [], 0
    for rule in load_catalogue():
        n += len(rule.signatures)
        for sg in rule.signatures:
            try:
                sg.regex.wide  # noqa: B018  (the CJK form is compiled on a line's first non-ASCII character)
            except CatalogueError as exc:
                bad.append(str(exc))
    assert n > 1000 and not bad, bad


# The scanner's pre-filter is a bytes regex: a signature with no literal to anchor on joins it whole, so a pattern
# written with a str-only escape (`\u4e00`) compiled as a rule but crashed `msdoctor logs` with a traceback (round 53,
# collector h53-l). It is a catalogue error naming the rule and saying how to write it.
def _with_pattern(pattern: str):
    return parse_rule(GOOD.replace("abc(?P<rank>\\d+)", pattern), "rules/comm/COMM999.toml")


def test_a_str_only_escape_without_anchor_is_a_catalogue_error_naming_the_rule():
    with pytest.raises(CatalogueError, match=r"COMM999\.toml.*literally"):
        ScanSpec(SignatureSet([_with_pattern(r"(?<![A-Za-z])[\u3400-\u9fff]{1,8}OOM")]))


def test_the_same_characters_written_literally_build():
    spec = ScanSpec(SignatureSet([_with_pattern("(?<![A-Za-z])[㐀-鿿]{1,8}OOM")]))
    assert spec.prefilter.search("任然OOM".encode()) is not None


@pytest.mark.parametrize("paste", [False, True])
def test_the_shipped_catalogue_builds_its_prefilter(paste):
    assert ScanSpec(SignatureSet(load_catalogue().select(kind="signature")), paste=paste).prefilter.pattern
