"""Ascend Transformer Boost's return codes as data (msdoctor/data/atb_status.toml, the atb::ErrorType enum of ATB's
include/atb/types.h): the small status of ATB's own failure sentences is named in the finding's description."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import atb_code_in, atb_status
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("text", "code", "name"),
    [
        ("[operation_base.cpp:625] PagedAttentionOperation_0 invalid param, setup check fail, error code: 8", 8,
         "ERROR_INVALID_TENSOR_DIM"),
        ("[operation_base.cpp:1] SelfAttentionOperation_1 infer shape check fail, error code: 13", 13,
         "ERROR_INVALID_TENSOR_INI_MATCH"),
        ("[2025-05-13 02:25:58.70282] [error] [38031] [runner.cpp:115] AllGatherHcclRunner_1_1:1 Execute Failed. st: 3",
         3, "ERROR_INTERNAL_ERROR"),
        ("[dicp] [error] [model.cpp:234] execute node[0] fail, error code: 12", 12, "ERROR_CANN_ERROR"),
        ("ATB runtime error code: 26", 26, "ERROR_OUT_OF_DEVICE_MEMORY"),
    ],
)
def test_atb_status_named(text, code, name):
    assert atb_code_in(text)[:2] == (code, name)


@pytest.mark.parametrize(
    "text",
    [
        "[dicp] [error] [model.cpp:304] op command execute node[65516] fail, error code: 65516",  # not an atb::Status
        "HcclCommInitRootInfo fail, error:2, rank:1, rankSize:4",  # HCCL's code, not ATB's
        "setup check fail, error code: 0",
    ],
)
def test_not_read(text):
    assert atb_code_in(text) is None


def test_table_is_the_enum():
    assert atb_status(25) == ("ERROR_HCCL_FAIL", "an HCCL API call failed")
    assert atb_status(30) is None


def test_named_in_the_finding(tmp_path):
    text = ("[2026-10-06 09:46:42.864848] [error] [187709] [operation_base.cpp:625] PagedAttentionOperation_0 invalid "
            "param, setup check fail, error code: 8\n")
    rc = _headline(tmp_path, text)
    assert "ERROR_INVALID_TENSOR_DIM" in rc["message"]


@pytest.mark.parametrize("name", ["ATB_STATUS_RE", "DCMI_CALL_CODE_RE", "MINDIE_CODE_RE"])
def test_code_regexes_are_linear(name):
    from msdoctor.engine import codes
    from tests.logs.linear import assert_linear

    rx = getattr(codes, name)
    assert_linear(rx.search, ["setup fail ", "dcmi ret is ", "execute node[1] fail ", "MIE04E0", "retCode ", "a"], name)


@pytest.mark.parametrize(
    ("text", "errno_name"),
    [
        ("[ERROR] HCCP(38011,python):2025-07-15-12:45:32.997.682 [ra_hdc_rdma.c:1199]tid:38011,ra_hdc_rdev_init(1199) : "
         "[init][ra_hdc_rdev]ra hdc message process failed ret(-67) phy_id(0)", "ENOLINK"),
        ("[ERROR] HCCP(130245,python3):2025-11-08-08:55:21.692.085 [ra_hdc_rdma.c:609]tid:131014,ra_hdc_typical_mr_reg : "
         "[reg][ra_hdc_typical_mr]ra hdc message process failed ret(-13) phy_id(2)", "EACCES"),
        ("[init][ra_rdev]ra rdev init failed, ret(-67)", "ENOLINK"),
    ],
)
def test_hccp_errno_named(text, errno_name):
    from msdoctor.engine.codes import hccp_errno_in

    assert hccp_errno_in(text)[1] == errno_name


@pytest.mark.parametrize("text", ["HcclCommInitRootInfo failed, ret(-67)", "[ERROR] HCCL(1,p):x rdma init fail. return: ret[328004]"])
def test_hccp_errno_only_in_hccp_lines(text):
    from msdoctor.engine.codes import hccp_errno_in

    assert hccp_errno_in(text) is None


def test_hccp_errno_regex_is_linear():
    from msdoctor.engine.codes import HCCP_ERRNO_RE
    from tests.logs.linear import assert_linear

    assert_linear(HCCP_ERRNO_RE.search, ["HCCP(1,p) ", "ra_hdc ret(", "ra rdev ", "a"], "HCCP_ERRNO_RE")
