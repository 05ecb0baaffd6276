"""The CANN runtime's internal return codes (rtError_t 0x07MMxxxx) as the runtime prints them next to a failed
internal call (`retCode=0x7020023`, `InnerCode=0x7070001`, `status=0x7150026`), read through msdoctor/data/
cann_codes.toml [rt_families] / [rt_codes]: the module byte is the family, and a listed code takes the rule of the ACL
code the runtime's own error map (rtErrMap_) turns it into, so both spellings of one failure read alike."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import family_rules, lookup
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("code", "family", "rule", "known"),
    [
        ("0x7020023", "0702", "MEM040", True),   # RT_ERROR_DRV_NO_RESOURCES -> ACL_ERROR_RT_RESOURCE_ALLOC_FAIL 207005
        ("0x07020014", "0702", "ENV050", True),  # RT_ERROR_DRV_INVALID_HANDLE -> ACL_ERROR_RT_INVALID_HANDLE 107017
        ("0x7030010", "0703", "COMM080", True),  # RT_ERROR_STREAM_SYNC_TIMEOUT -> 507046
        ("0x7150026", "0715", "NUM030", True),   # RT_ERROR_TSFW_AICORE_EXCEPTION -> 507015
        ("0x703001c", "0703", "NUM047", True),   # capture-mode refusal: a data rule of its own
        ("0x7150004", "0715", "NUM030", False),  # unlisted: the task scheduler module's reading
        ("0x711ffff", "0711", "ENV050", False),  # unlisted common-check code
    ],
)
def test_rt_codes_by_module_and_acl_mapping(code, family, rule, known):
    info = lookup(code)
    assert info is not None and info.family == family and info.rule == rule and info.known is known


def test_rt_code_is_a_consequence():
    # the inner echo of what the runtime reports outward: the outward code (or the line that says why) is the root
    assert lookup("0x7030010").role == lookup("0x7020023").role == "consequence"
    assert lookup("0x711ffff").known is False


def test_not_a_runtime_code():
    assert lookup("0x7cafc4e") is None  # module 0xCA: no runtime module, an address
    assert lookup("0x8020014") is None
    assert lookup("0x702001") is None  # too short


def test_rt_families_are_generic_rules():
    assert {"ENV050", "NUM030", "MEM040", "PERF010"} <= family_rules()


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # a runtime call that failed in the driver for lack of notify resources (no catalogue rule for the words)
        ("[ERROR] RUNTIME(486565,python3):2026-07-05-18:26:40.664.341 [notify.cc:85]486565 Setup:"
         "setup failed, device_id=0, retCode=0x702001b.", "MEM040"),
        ("[ERROR] RUNTIME(289610,):2026-09-10-08:52:41.495.097 [api_impl.cc:2150]291230 EventQueryStatus:"
         "context is abort, status=0x7150026.", "NUM030"),
    ],
)
def test_runtime_line_headline(tmp_path, line, rule):
    rc = _headline(tmp_path, line + "\n")
    assert rc["rule"] == rule


def test_rt_code_yields_to_the_outward_code():
    # a known runtime code is never more specific than a listed CANN / ACL code of the same failure
    assert lookup("0x715006c").specificity > lookup("EI0012").specificity
    assert lookup("0x7150059").rule == lookup("107020").rule == "COMM080"
