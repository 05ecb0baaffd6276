"""An ACL return code quoted by its name (acl.h / rt_error_codes.h spelling) is read like its number.

Users quote the constant rather than the number (HAMi #1846's title: "Ascend310P vir01/vir04 vNPU fails to load CANN 8/9
OM with `ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT`"), and backends print both (ONNX Runtime's `CANN failure 500001:
ACL_ERROR_FAILURE`). The data (msdoctor/data/cann_codes.toml) opens each code's meaning with its name; the lookup uses
that, so a name is routed to the rule its number is, and a name the data does not list stays unread."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import lookup
from tests.logs.conftest import paste_root_cause as _root


@pytest.mark.parametrize(
    ("name", "code", "rule"),
    [
        ("ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT", "507009", "ENV050"),
        ("ACL_ERROR_REPEAT_INITIALIZE", "100002", "ENV050"),
        ("ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", "507046", "COMM080"),
        ("acl_error_rt_soc_version", "507008", "ENV050"),
    ],
)
def test_name_is_its_number(name, code, rule):
    info = lookup(name)
    assert info is not None and info.code == code and info.rule == rule and info.known


def test_unlisted_name_is_not_read():
    assert lookup("ACL_ERROR_NONE") is None
    assert lookup("ACL_ERROR_NOT_A_CODE") is None


def test_title_quoting_the_name_heads_by_the_code(tmp_path):
    rc = _root(tmp_path, "Ascend310P vir01/vir04 vNPU fails to load CANN 8/9 OM with `ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT`\n")
    assert rc["rule"] == "ENV050"

