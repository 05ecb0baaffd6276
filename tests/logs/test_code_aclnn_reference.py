"""AclNN / FE codes of the CANN error-code reference ("AclNN Errors", "Operator Errors", "FE Errors" pages) encoded in
msdoctor/data/cann_codes.toml: the file, configuration-file and environment-variable codes route to ENV050 (the install
or its configuration), the input and execution codes keep the EZ family's operator reading (NUM030)."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import lookup
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(("code", "rule"), [("EZ0030", "ENV050"), ("EZ0031", "ENV050"), ("EZ0034", "ENV050"),
                                            ("EZ1002", "ENV050"), ("EZ0004", "NUM030"), ("EZ2001", "NUM030"),
                                            ("E20101", "ENV050")])
def test_reference_codes_are_known(code, rule):
    info = lookup(code)
    assert info is not None and info.known and info.rule == rule and info.meaning


def test_a_specific_rule_keeps_precedence_over_the_listed_code(tmp_path):
    line = ("Invalid_Input(EZ0004): Parameter expertScales of MoeDistributeDispatchV2 Tiling Debug is required, but it "
            "is empty.\n")
    rc = _headline(tmp_path, line)
    assert rc["rule"] == "NUM085"  # the catalogue rule that reads the empty parameter, not the generic code rule


def test_environment_variable_code_heads_as_env(tmp_path):
    line = "EZ1002: [PID: 7] 2026-01-01-00:00:00.000.000 aclnnInit failed. Environment variable ASCEND_OPP_PATH is not configured.\n"
    rc = _headline(tmp_path, line)
    assert rc["rule"] == "ENV050" and "source the CANN set_env.sh" in rc["fix"]
