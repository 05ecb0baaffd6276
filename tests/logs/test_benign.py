"""A line a rule knows as no fault is not an unrecognised error, however it is logged (rule field `benign`).

MindSpore logs its failed source-path look-up for a notebook cell at ERROR (`[ERROR] CORE(…) … GetRealPath] Get
realpath failed, path[/tmp/ipykernel_…]`, ENV340, benign): before the field existed, a paste holding only those
lines was reported as an "unrecognised error" with a keyword guess (exit 1), though ENV340 itself says it is no
fault. The lines below are a real user's (orange-pi-mindspore#12, a holdout case; mindnlp-986 for the MatMul).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor.engine.catalogue import load_catalogue, parse_document
from msdoctor.errors import CatalogueError
from tests.conftest import run_cli

REALPATH = ("[ERROR] CORE(50128,e7ffe003e020,python):2024-10-15-18:07:28.735.540 [mindspore/core/utils/file_utils.cc:253] "
            "GetRealPath] Get realpath failed, path[/tmp/ipykernel_50128/1464347597.py]\n")
MATMUL = "ValueError: For 'MatMul' the input dimensions must be equal, but got 'x1_col': 768 and 'x2_row': 3072.\n"
HOLDOUT = Path(__file__).resolve().parents[1] / "realworld" / "holdout" / \
    "orange-pi-mindspore-12-310b-ssd-infer-getrealpath-noise-swap-2024"


def test_benign_lines_alone_are_no_unrecognised_error(tmp_path: Path) -> None:
    (tmp_path / "paste.log").write_text(REALPATH * 3, encoding="utf-8")
    res = run_cli("logs", "--json", str(tmp_path))
    out = res.json()
    rc = out["root_cause"]
    assert rc.get("verdict") != "unrecognised-error" and rc.get("rule") is None, rc
    assert rc["benign"] == ["ENV340"] and "no fault" in rc["reason"] and "not in this text" in rc["reason"], rc
    assert {f["rule"] for f in out["findings"]} == {"ENV340"}  # no keyword guess (ENV097) at the benign line
    assert res.rc == 0


def test_the_real_paste_is_read_as_benign_noise() -> None:
    res = run_cli("logs", str(HOLDOUT))
    assert "unrecognised error" not in res.out and "no fault however they are logged (ENV340)" in res.out, res.out
    assert res.rc == 0


def test_a_benign_line_does_not_hide_the_error_after_it(tmp_path: Path) -> None:
    (tmp_path / "paste.log").write_text(REALPATH + MATMUL, encoding="utf-8")
    rc = run_cli("logs", "--json", str(tmp_path)).json()["root_cause"]
    assert rc["rule"] == "NUM096" and "benign" not in rc, rc


def test_benign_is_for_info_signature_rules_only() -> None:
    cat = load_catalogue()
    assert {r.id for r in cat if r.benign} >= {"ENV340", "ENV020", "ENV059", "DATA004", "ENV301"}
    assert all(r.severity.value == "info" for r in cat if r.benign)
    doc = Path(cat.get("ENV340").path).read_text(encoding="utf-8")  # type: ignore[union-attr]
    with pytest.raises(CatalogueError, match="'benign' is for signature rules of severity info"):
        parse_document(doc.replace('severity = "info"', 'severity = "warning"'), "ENV340.toml", area_dir="env")
    with pytest.raises(CatalogueError, match="'benign' must be true or false"):
        parse_document(doc.replace("benign = true", 'benign = "yes"'), "ENV340.toml", area_dir="env")
