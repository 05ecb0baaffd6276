"""CUDA's error codes as data (msdoctor/data/cuda_errors.toml, cudaError_t / CUresult): the code in any wrapper's
line — NCCL's `Cuda failure 'msg'`, PyTorch's `CUDA error: msg`, the old `cuda runtime error (N) : msg`, an enum's
name — gives its rule (a catalogue rule where one describes the code, else the family's ENV423 / RT080 / MEM718),
instead of the word NCCL making it a COMM guess (blind rounds 69–70)."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import cuda_lookup, family_rules, lookup
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("window", "name", "rule"),
    [
        (" 217 'peer access is not supported between these two devices'", "cudaErrorPeerAccessUnsupported", "ENV952"),
        (": an illegal memory access was encountered", "cudaErrorIllegalAddress", "RT022"),
        (" 'initialization error'", "cudaErrorInitializationError", "ENV423"),
        (" (2) : out of memory at /pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265", "cudaErrorMemoryAllocation",
         "MEM718"),
        ("(700), an illegal memory access was encountered.", "cudaErrorIllegalAddress", "RT022"),
        (" /opt/DeepEP/csrc/kernels/runtime.cu:25 'named symbol not found'", "cudaErrorSymbolNotFound", "ENV886"),
        (" in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory", "cudaErrorMemoryAllocation", "MEM718"),
        (" 802", "cudaErrorSystemNotReady", "ENV423"),  # from 98 up a number means the same in every release
        ("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", "cudaErrorNoDevice", "ENV120"),  # driver name
        (": unknown error", "cudaErrorUnknown", "RT080"),
    ],
)
def test_code_read_from_the_wrapper(window, name, rule):
    info = cuda_lookup(window)
    assert info is not None and (info.code, info.rule) == (name, rule)


@pytest.mark.parametrize(
    "window",
    [
        " (38) : no such thing",  # 38 was cudaErrorNoDevice before CUDA 10.1, 4 cudaErrorLaunchFailure: not read alone
        " (4) : at /pytorch/aten/src/THC/THCGeneral.cpp:50",
        " handling: see unknown error codes in the FAQ",  # the message must follow the wrapper's words
        ": CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",  # cuBLAS's status: the catalogue's
        " 208[cudaGraphicsUnregisterResource(s.cudaColorBuffer[i]);]",  # not a listed code
        " 'invalid argument'",  # 1 is any call's words: ENV, RT and COMM cases alike; RT043 reads PyTorch's own line
    ],
)
def test_not_read(window):
    assert cuda_lookup(window) is None


def test_a_bare_number_yields_to_a_line_that_names_the_fault(tmp_path):
    # OpenPCDet #273 (real lines): the prose's `cuda error 710` before cumm's own `this arch isn't supported!` (ENV393)
    text = "I updated cumm but now I am getting cuda error 710 now\nthis arch isn't supported!\n"
    assert cuda_lookup(" 710 now").bare
    # a program's print, its message cut by the paste (EasyR1 #579): the code, not a sentence's number
    assert not cuda_lookup(" 217 'peer access is not supported between these").bare
    assert _headline(tmp_path, text)["rule"] == "ENV393"


def test_names_and_families():
    assert {"ENV423", "RT080", "MEM718"} <= family_rules()  # generic: a specific rule of the same line heads first
    assert lookup("cudaErrorUnknown").internal  # the catch-all yields to any line that says what failed
    assert lookup("CUDA_ERROR_ILLEGAL_ADDRESS").code == "cudaErrorIllegalAddress"
    assert lookup("cudaErrorDoesNotExist") is None
    # the set-up codes of the driver API that round 74 found missing (OpenMM's module load: 301), as a family
    for name in ("CUDA_ERROR_FILE_NOT_FOUND", "CUDA_ERROR_JIT_COMPILATION_DISABLED", "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
                 "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", "CUDA_ERROR_CONTAINED"):
        got = lookup(name)
        assert got is not None and got.family == "CUDA ENV", name


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        # NCCL's CUDACHECK with a code of the machine's set-up: the code's rule, not a COMM guess by the word NCCL
        # (real line: tests/realworld/logs/nccl-tests-165-…-invalid-device-ordinal-2023 has the nccl-tests form)
        ("host:1:2 [1] transport/p2p.cc:275 NCCL WARN Cuda failure 101 'invalid device ordinal'\n", "ENV913"),
        ("host:392:494 [2] enqueue.cc:43 NCCL WARN Cuda failure 'out of memory'\n"
         "host:392:494 [2] enqueue.cc:54 NCCL WARN Cuda failure 'invalid resource handle'\n", "MEM718"),
        ("NCCL WARN Cuda failure 'initialization error'\n", "ENV423"),
    ],
)
def test_headline(tmp_path, text, rule):
    rc = _headline(tmp_path, text)
    assert rc["rule"] == rule
    if rule == "ENV423":  # the message names the code it read
        assert "cudaErrorInitializationError" in rc["message"] and "3 = initialization error" in rc["message"]


def test_code_regexes_are_linear():
    from msdoctor.engine import codes
    from tests.logs.linear import assert_linear

    assert_linear(codes.cuda_lookup, ["CUDA error: ", "cudaError", "' ", ": ", "a"], "cuda_lookup")


def test_without_the_codes_rule_its_family_reads_it():
    # a rule set without RT022 (bench/leaveout.py switches the expected rule off): 700 falls to its family's RT080, not
    # to whichever generic rule's pattern read the line first
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import SignatureSet

    sigs = SignatureSet([r for r in load_catalogue().select(kind="signature") if r.id != "RT022"])
    fired = {m.rule.id for m in sigs.match("NCCL WARN Cuda failure 'an illegal memory access was encountered'")}
    assert "RT080" in fired and not fired & {"ENV423", "MEM718"}
