"""The driver management interface's (DCMI's) return codes as data (msdoctor/data/dcmi_result.toml, from the DCMI API
reference's return-code table): the negative code of npu-smi's `dcmi module initialize failed. ret is -8005` or a
device plugin's `retCode: -8255` is named in the finding's description; a -8xxx code outside a DCMI message, or one
the reference does not list, is not."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import dcmi_code_in, dcmi_result
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("text", "code", "name"),
    [
        ("dcmi module initialize failed. ret is -8005", -8005, "DCMI_ERR_CODE_INNER_ERR"),
        ("dcmi model initialized failed, because the device is used. ret is -8020", -8020,
         "DCMI_ERR_CODE_RESOURCE_OCCUPIED"),
        ("[2026-04-28 07:59:11.955139][WARN]     261     dcmi/dcmi.go:1466    get cur vDev's activity info failed, err: "
         "retCode: -8255", -8255, "DCMI_ERR_CODE_NOT_SUPPORT"),
        ("failed to get device health:ret code: -8010,health code: 4", -8010, "DCMI_ERR_CODE_SEND_MSG_FAIL"),
        ("dcmi init failed, error code: -8001", -8001, "DCMI_ERR_CODE_INVALID_PARAMETER"),
        ("DCMI errCode=-8002 when querying the board", -8002, "DCMI_ERR_CODE_OPER_NOT_PERMITTED"),
    ],
)
def test_dcmi_code_named(text, code, name):
    assert dcmi_code_in(text)[:2] == (code, name)


@pytest.mark.parametrize(
    "text",
    [
        "loss -8005.2 at step 3",  # no DCMI word, no DCMI label
        "dcmi module initialize failed. ret is -8014",  # not in the reference's table
        "HcclCommInitRootInfo failed, ret: -8005",  # another library's code
    ],
)
def test_not_read(text):
    assert dcmi_code_in(text) is None


def test_table_has_the_reference_codes():
    assert dcmi_result(-8013)[0] == "DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER"
    assert dcmi_result("-8017")[0] == "DCMI_ERR_CODE_IS_UPGRADING"
    assert dcmi_result(-8018) is None


def test_dcmi_code_named_in_the_finding(tmp_path):
    text = ("root@aa6890a14c34:/# npu-smi info\nDrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\n"
            "dcmi model initialized failed, because the device is used. ret is -8020\n")
    rc = _headline(tmp_path, text)
    assert "DCMI_ERR_CODE_RESOURCE_OCCUPIED" in rc["message"]
