"""GE's own error-code table (the `ge_error_code` table GE registers with REG_FORMAT_ERROR_MSG) read into
msdoctor/data/cann_codes.toml: the codes whose message says more than the E1 family's reading keep that family's
rule (ENV050: an ATC / graph-engine option, file or model the engine rejects) and carry their own meaning. The
message texts below are the table's ErrMessage formats filled in as GE prints them."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import lookup
from tests.logs.conftest import paste_root_cause as _headline

GE_CODES = ["E10002", "E10011", "E10018", "E10019", "E10031", "E11029", "E11033", "E12009", "E13001", "E13003",
            "E13010", "E13014", "E13023", "E13024", "E14001", "E16001", "E16002", "E16004", "E19999"]


@pytest.mark.parametrize("code", GE_CODES)
def test_ge_table_codes_are_known_and_keep_the_family_rule(code):
    info = lookup(code)
    assert info is not None and info.family == "E1" and info.known
    assert info.rule == "ENV050" and info.meaning


def test_unlisted_ge_code_keeps_the_family_reading():
    info = lookup("E13027")  # "Failed to connect to the peer address %s": left to the family on purpose
    assert info is not None and info.family == "E1" and not info.known and info.rule == "ENV050"


@pytest.mark.parametrize(
    ("line", "rule", "said"),
    [
        # since round 59 the messages of E13010 and E10018 have rules of their own (ENV083: an operator no plug-in
        # converts; ENV839: ATC's --input_shape with a dynamic option), which head with the values they read; the
        # area is the table's
        ("E13010: [PID: 7] 2025-01-01-00:00:00.000.000 No operator plugin is registered for Op: Gather_12, "
         "optype: ai.onnx::GatherFoo.", "ENV083", "Gather_12"),
        ("E10018: [PID: 7] 2025-01-01-00:00:00.000.000 Value [1,-1,224,224] for shape [0] is invalid. When "
         "--dynamic_batch_size is included, only batch size N can be -1 in --input_shape.", "ENV839", "dynamic_batch_size"),
        ("E11029: [PID: 7] 2025-01-01-00:00:00.000.000 Op conv1 exists in model file but not found in weight file.",
         "ENV050", "do not belong together"),
    ],
)
def test_ge_code_line_heads_as_env_with_its_meaning(tmp_path, line, rule, said):
    rc = _headline(tmp_path, "ATC run failed, Please check the detail log, Try 'atc --help' for more information\n"
                             + line + "\n")
    assert rc["rule"] == rule
    assert said in rc["message"]
