"""HCCL's own error number in its plog lines, `errNo[0x0000000005000007]`: HCCL_ERROR_CODE(error) puts HCCL's module id
5 in bits 24-31, the sub-module (HCCL 0, HCOM 1, CLTM 2, custom op 3) in bits 16-23 and the HcclResult in the low 16
bits, so the code of msdoctor/data/hccl_result.toml is read from it (and named in the finding's description)."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import hccl_code_in, hccl_result
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("text", "code", "name"),
    [
        ("[ERROR] HCCL(36035,mindie_llm_backend_connector):2025-05-13-02:25:58.068.817 [op_base.cc:974][36818][Init]"
         "[CommRootInfoConfig]errNo[0x0000000005000002]HcclCommInitRootInfo failed.", 2, "HCCL_E_PTR"),
        ("[hccl_comm.cc:1][Init]errNo[0x0000000005010001] hccl initialize failed", 1, "HCCL_E_PARA"),  # HCOM sub-module
        ("[Create][Connection]errNo[0x000000000500000b] connect timeout", 11, "HCCL_E_TCP_CONNECT"),
        ("[Retry]errNo[0x0000000005000017] op retry failed", 23, "HCCL_E_OPRETRY_FAIL"),
    ],
)
def test_errno_low_bits_are_the_hccl_result(text, code, name):
    assert hccl_code_in(text)[:2] == (code, name)


@pytest.mark.parametrize("text", ["errNo[0x0000000000000009] not HCCL's module", "errNo[0x0000000005070001] sub 7"])
def test_other_modules_are_not_read(text):
    assert hccl_code_in(text) is None


def test_later_results():
    assert hccl_result(24) == ("HCCL_E_OOM", "out of memory")


def test_errno_named_in_the_finding(tmp_path):
    line = ("[ERROR] HCCL(36035,mindie_llm_backend_connector):2025-05-13-02:25:58.068.817 [op_base.cc:974][36818][Init]"
            "[CommRootInfoConfig]errNo[0x0000000005000002]HcclCommInitRootInfo failed.\n")
    rc = _headline(tmp_path, line)
    assert "HCCL_E_PTR" in rc["message"]
