"""A malformed rule file is reported with its path and field, never a traceback."""

from __future__ import annotations

import pytest

from msdoctor.engine.catalogue import load_from, parse_rule
from msdoctor.errors import CatalogueError

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
        (lambda s: s.replace("abc(?P<rank>", "abc(?P<rank"), "signatures[0].pattern"),
        (lambda s: s.replace('id = "COMM999"', 'id = "comm9"'), "id"),
        (lambda s: s.replace('area = "COMM"', 'area = "NET"'), "area"),
        (lambda s: 'bogus = 1\n' + s, "bogus"),
        (lambda s: 'check = "env.x"\n' + s, "check"),
        (lambda s: s + 'colour = "red"\n', "signatures[0].colour"),
        (lambda s: s.replace("title =", "title = = "), "TOML"),
    ],
)
def test_malformed_rule_names_path_and_field(mutate, field):
    with pytest.raises(CatalogueError) as err:
        parse_rule(mutate(GOOD), "rules/comm/COMM999.toml")
    assert "rules/comm/COMM999.toml" in str(err.value) and field in str(err.value)


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
