"""The DVPP (EN) family of CANN error codes, read by what each code means (msdoctor/data/cann_codes.toml).

The CANN troubleshooting guide lists EN0001-EN0017 ("DVPP Errors", hicann/docs docs/troubleshooting/zh/error-codes);
the family's own reading (ENV050: a package or file fault) is right for some of them only. A parameter, channel or
call order the application got wrong is the picture/channel description it fills in (DATA048), a picture the decoder
cannot take is the input (DATA047), a task time-out is DATA042's, a buffer not from the DVPP allocator MEM033's and
memory exhaustion MEM040's. The message texts are the guide's examples (EN0001, EN0007, EN0008, EN0013, EN0016)."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import lookup
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("EN0001", "DATA048"), ("EN0002", "DATA048"), ("EN0003", "DATA048"), ("EN0005", "DATA048"),
        ("EN0013", "DATA048"), ("EN0017", "DATA048"),
        ("EN0006", "MEM033"), ("EN0007", "DATA042"), ("EN0008", "DATA047"), ("EN0009", "DATA047"),
        ("EN0010", "MEM040"), ("EN0011", "MEM040"), ("EN0012", "MEM040"),
        # the family's reading: not supported here, no channel left, a resource or file the package lacks
        ("EN0004", "ENV050"), ("EN0014", "ENV050"), ("EN0015", "ENV050"), ("EN0016", "ENV050"),
        # an unlisted code of the family keeps the family's reading
        ("EN0099", "ENV050"),
    ],
)
def test_dvpp_codes_by_meaning(code, rule):
    info = lookup(code)
    assert info is not None and info.family == "EN" and info.rule == rule
    assert info.known == (code != "EN0099")


def test_runtime_kernel_load_and_aicpu_timeout_codes():
    # EE1008 "OP kernel loading failed" is the op package, not the op's inputs (the EE family reads NUM030)
    assert lookup("EE1008").rule == "ENV050" and lookup("EE1008").known
    # E30008 keeps the AI CPU family's operator reading, with its own meaning
    e = lookup("E30008")
    assert e.rule == "NUM030" and e.known and "GetNext" in e.meaning


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("EN0001: [PID: 3101] 2025-10-23-17:30:40.098.984 VdecWrapperHdc::hi_mpi_vdec_send_stream failed, Value -2 "
         "for parameter milli_sec is invalid. Reason: milli_sec must only be -1, 0 or positive number.", "DATA048"),
        ("[PID: 3101] 2025-10-23-17:30:40.098.984 Not_Supported_File_Type(EN0008): The input JPEG picture is not "
         "supported. Reason: Arithmetic codes are not supported. Only Huffman codes are supported.", "DATA047"),
        ("EN0007: [PID: 7] 2025-01-01-00:00:00.000.000 GetResult times out. Reason: the configured timeout might be "
         "too short.", "DATA042"),
        ("EN0013: [PID: 7] 2025-01-01-00:00:00.000.000 The channel resources are busy. Reason: Channel 0 of device 0 "
         "has been created.", "DATA048"),
        ("EN0016: [PID: 7] 2025-01-01-00:00:00.000.000 Failed to open file libmpi_dvpp_adapter.so. Reason: "
         "libmpi_dvpp_adapter.so: No such file or directory.", "ENV050"),
    ],
)
def test_dvpp_code_line_heads_by_its_meaning(tmp_path, line, rule):
    rc = _headline(tmp_path, line + "\n")
    assert rc["rule"] == rule
