"""The catalogue drives what runs (issue 10 item 4): preflight groups and every-poll rules come from
the rule TOMLs, retired ids stay taken, parameters are validated at load, a crashing check is reported."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import msdoctor.engine.catalogue as cat
import msdoctor.engine.evaluate as evaluate
from msdoctor.engine.catalogue import (
    Tombstone,
    load_catalogue,
    load_from,
    parse_document,
    parse_rule,
    rules_root,
)
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Hit, check_params
from msdoctor.errors import CatalogueError

CHECK_RULE = """
id = "ENV998"
title = "t t t t t t"
severity = "warning"
area = "ENV"
source = "env"
check = "ckpt.replicas_differ"
detects = "detects something"
cause = "a cause of it"
confirm = "how to confirm"
fix = "how to fix it"
example = "an example line"
references = ["somewhere"]
"""
TOMBSTONE = """
id = "ENV997"
area = "ENV"
status = "retired"
title = "An old rule"
retired = "2026-12-01: merged into ENV108"
replaced_by = "ENV108"
"""


def _catalogue_with(tmp_path: Path, **files: str) -> Path:
    root = tmp_path / "rules"
    shutil.copytree(rules_root(), root, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    for name, text in files.items():
        (root / name[:-3].lower() / f"{name}.toml").write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "extra, field",
    [
        ('preflight_group = "gpu"\n', "preflight_group"),
        ("every_poll = true\n", "every_poll"),
        ('every_poll = "yes"\n', "every_poll"),
        ('status = "deprecated"\n', "status"),
    ],
)
def test_bad_catalogue_fields_name_path_and_field(extra: str, field: str) -> None:
    with pytest.raises(CatalogueError) as err:
        parse_rule(extra + CHECK_RULE, "rules/env/ENV998.toml")
    assert "rules/env/ENV998.toml" in str(err.value) and f"'{field}'" in str(err.value)


def test_preflight_group_only_on_preflight_sources() -> None:
    with pytest.raises(CatalogueError, match="'preflight_group' is for check rules of source env or ranktable"):
        parse_rule('preflight_group = "env"\n' + CHECK_RULE.replace('source = "env"', 'source = "run"'), "x.toml")
    assert parse_rule('preflight_group = "env"\n' + CHECK_RULE, "x.toml").preflight_group == "env"


@pytest.mark.parametrize(
    "params, message",
    [
        ("[params]\nbogus = 1\n", "unknown field 'params.bogus' (check ckpt.replicas_differ takes: max_listed, tolerance)"),
        ('[params]\ntolerance = "tiny"\n', "field 'params.tolerance' must be number, got 'tiny'"),
        ("[params]\nmax_listed = 2.5\n", "field 'params.max_listed' must be integer, got 2.5"),
    ],
)
def test_params_validated_when_the_catalogue_loads(tmp_path: Path, params: str, message: str) -> None:
    root = _catalogue_with(tmp_path, ENV998=CHECK_RULE + params)
    with pytest.raises(CatalogueError) as err:
        load_from(root)
    assert str(err.value) == f"{root}/env/ENV998.toml: {message}"


def test_required_param_missing(tmp_path: Path) -> None:
    root = _catalogue_with(tmp_path, ENV998=CHECK_RULE.replace("ckpt.replicas_differ", "perf.slow_link"))
    with pytest.raises(CatalogueError, match=r"ENV998.toml: missing field 'params.ratio' \(check perf.slow_link needs it\)"):
        load_from(root)


def test_int_is_a_number_and_the_real_catalogue_validates() -> None:
    rule = parse_rule(CHECK_RULE + "[params]\ntolerance = 0\n", "x.toml")
    cat.validate_params(rule)  # an integer where a float is declared is fine (TOML writes 0, not 0.0)
    assert len(load_from(rules_root())) == len(load_catalogue())


def test_undeclared_check_is_a_catalogue_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def bare(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
        yield from ()

    rule = parse_rule(CHECK_RULE, "rules/env/ENV998.toml")
    with pytest.raises(CatalogueError, match="ENV998.toml: check ckpt.replicas_differ declares no parameters"):
        cat.validate_params(rule, bare)


def test_tombstone_keeps_its_id(tmp_path: Path) -> None:
    t = parse_document(TOMBSTONE, "rules/env/ENV997.toml", "env")
    assert isinstance(t, Tombstone) and t.replaced_by == "ENV108"
    root = _catalogue_with(tmp_path, ENV997=TOMBSTONE)
    c = load_from(root)
    assert "ENV997" not in c and c.get("ENV997") is None and c.retired("ENV997") == t.__class__(**{**t.__dict__, "path": str(root / "env/ENV997.toml")})
    assert all(r.id != "ENV997" for r in c.select())
    with pytest.raises(CatalogueError, match="retired"):
        parse_rule(TOMBSTONE, "x.toml")  # a tombstone is not a rule to run


def test_tombstone_cannot_carry_rule_fields_nor_point_nowhere(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError, match="unknown field 'check'"):
        parse_document(TOMBSTONE + 'check = "env.x"\n', "x.toml")
    with pytest.raises(CatalogueError, match="'replaced_by' 'ENV000' is not an active rule"):
        load_from(_catalogue_with(tmp_path, ENV997=TOMBSTONE.replace("ENV108", "ENV000")))


def test_reusing_a_retired_id_is_an_error() -> None:
    rule = parse_rule(CHECK_RULE.replace("ENV998", "ENV997"), "rules/env/ENV997-new.toml")
    t = parse_document(TOMBSTONE, "rules/env/ENV997.toml")
    assert isinstance(t, Tombstone)
    with pytest.raises(CatalogueError, match=r"ENV997-new.toml: id ENV997 is retired \(rules/env/ENV997.toml\): a retired id is never reused"):
        cat.Catalogue([rule, load_catalogue().get("ENV108")], [t])  # type: ignore[list-item]


def test_every_poll_and_preflight_come_from_the_tomls() -> None:
    c = load_catalogue()
    assert {r.id for r in c.select(every_poll=True)} == {"COMM201", "COMM202", "COMM203", "NUM201", "ENV201"}
    host = {r.id for r in c.select(preflight_group="host")}
    assert {"MEM101", "MEM102", "DATA101", "DATA102"} <= host
    assert all(r.source == "run" for r in c.select(every_poll=True))


def test_a_crashing_check_is_not_evaluated_with_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    @check_params()
    def broken(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
        yield Hit("first", (Evidence("x"),))
        raise KeyError("devices")

    monkeypatch.setattr(evaluate, "resolve_check", lambda name: broken)
    rules = [parse_rule(CHECK_RULE, "x.toml"), load_catalogue().get("ENV107")]
    ev = evaluate.run_checks(rules, Facts())  # type: ignore[arg-type]
    assert [n.rule for n in ev.not_evaluated] == ["ENV998", "ENV107"] and not ev.findings
    reason = ev.not_evaluated[0].reason
    assert reason.startswith("check ckpt.replicas_differ failed: KeyError: 'devices' (at test_catalogue_drives.py:")


def test_a_merge_conflict_marker_inside_a_text_field_is_refused() -> None:
    # a conflict inside ''' … ''' is still valid TOML: round 64's merge committed one in PAR050's `detects`
    from msdoctor.engine.catalogue import load_catalogue, parse_document

    rule = load_catalogue().get("PAR050")
    assert rule is not None
    text = Path(rule.path).read_text(encoding="utf-8")
    bad = text.replace("detects = '''\n", "detects = '''\n<<<<<<< HEAD\nold words\n=======\nnew words\n>>>>>>> h64-d\n", 1)
    with pytest.raises(CatalogueError, match=r"PAR050.toml:\d+: an unresolved merge conflict marker \(<<<<<<<\)"):
        parse_document(bad, "PAR050.toml", area_dir="par")


SHARED_RULE = CHECK_RULE.replace('source = "env"\ncheck = "ckpt.replicas_differ"\n', 'signatures_of = "ENV423"\n')


def test_a_code_family_rule_reads_the_lines_of_the_rule_it_names(tmp_path):
    """CUDA's RT080 / MEM718 and CANN's COMM080 / PERF010 keep no copy of the signature list their family's first
    rule holds: the catalogue gives them that rule's signatures (one list, one file)."""
    c = load_catalogue()
    assert c.get("RT080").signatures == c.get("MEM718").signatures == c.get("ENV423").signatures
    assert c.get("COMM080").signatures == c.get("PERF010").signatures == c.get("ENV050").signatures
    assert c.get("RT080").kind == "signature" and c.get("RT080").source == "log"
    loaded = load_from(_catalogue_with(tmp_path, ENV998=SHARED_RULE))
    assert loaded.get("ENV998").signatures == c.get("ENV423").signatures


@pytest.mark.parametrize(
    "text, message",
    [(SHARED_RULE.replace("ENV423", "ENV998"), "another rule's id"),
     (SHARED_RULE + '\n[[signatures]]\npattern = "x"\n', "no 'signatures'"),
     (SHARED_RULE.replace("ENV423", "RT080"), "signatures of its own"),
     (SHARED_RULE.replace("ENV423", "ENV099"), "signatures of its own")],
)
def test_signatures_of_names_a_rule_with_its_own_list(tmp_path, text, message):
    with pytest.raises(CatalogueError, match=message):
        load_from(_catalogue_with(tmp_path, ENV998=text))
