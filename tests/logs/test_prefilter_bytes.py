"""The scanner's pre-filter is a bytes regex: a signature with no literal to anchor on joins it whole, so a pattern
written with a str-only escape (`\\u4e00`) compiled as a rule but crashed `msdoctor logs` with a traceback (round 53,
h53-l). Now the catalogue error names the rule and says how to write it; the shipped catalogue builds its pre-filter."""

from __future__ import annotations

import pytest

from msdoctor.engine.catalogue import load_catalogue, parse_rule
from msdoctor.engine.evaluate import SignatureSet
from msdoctor.errors import CatalogueError
from msdoctor.facts.logstate import ScanSpec

RULE = """
id = "ENV998"
title = "t t t t t t"
severity = "info"
area = "ENV"
role = "info"
detects = "detects something"
cause = "a cause of it"
confirm = "how to confirm"
fix = "how to fix it"
example = "an example line"
references = ["somewhere"]

[[signatures]]
pattern = '''{pattern}'''
"""


def test_a_str_only_escape_without_anchor_is_a_catalogue_error_naming_the_rule():
    rule = parse_rule(RULE.format(pattern=r"(?<![A-Za-z])[\u3400-\u9fff]{1,8}OOM"), "rules/env/ENV998.toml")
    with pytest.raises(CatalogueError, match=r"ENV998\.toml.*literally"):
        ScanSpec(SignatureSet([rule]))


def test_the_same_characters_written_literally_build():
    rule = parse_rule(RULE.format(pattern="(?<![A-Za-z])[㐀-鿿]{1,8}OOM"), "rules/env/ENV998.toml")
    spec = ScanSpec(SignatureSet([rule]))
    assert spec.prefilter.search("任然OOM".encode()) is not None


@pytest.mark.parametrize("paste", [False, True])
def test_the_shipped_catalogue_builds_its_prefilter(paste):
    assert ScanSpec(SignatureSet(load_catalogue().select(kind="signature")), paste=paste).prefilter.pattern
