"""The last code pages of the CANN troubleshooting guide's error-code folder (hicann/docs docs/troubleshooting/zh/
error-codes): E30004, E39001, EL0018 and EM9002, read by what each code means (msdoctor/data/cann_codes.toml).

E30004 and E39001 are E3 codes, whose family reads as an AI CPU kernel that failed (NUM030); neither is one: E30004 is
a damaged process binary on the device behind an ECC memory error (the device, as E30009), E39001 an argument of the
device-side process service (the E39 codes are the environment's). EL0018 is host memory, not device memory: the fix
must say so. EM9002 keeps its family's reading with its own meaning. The message texts are the guide's own."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import lookup
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("code", "family", "rule"),
    [
        ("E30004", "E3", "ENV050"), ("E39001", "E3", "ENV050"), ("EL0018", "EL", "MEM040"), ("EM9002", "EM", "ENV050"),
    ],
)
def test_codes_by_meaning(code, family, rule):
    info = lookup(code)
    assert info is not None and info.family == family and info.rule == rule and info.known


def test_unlisted_ai_cpu_code_keeps_the_family_reading():
    # the narrower readings are the listed codes only: another E3 code still reads as an AI CPU kernel failure
    info = lookup("E30099")
    assert info.rule == "NUM030" and not info.known


def test_host_memory_code_fix_is_about_host_memory():
    info = lookup("EL0018")
    assert "host memory" in info.meaning and "host memory" in info.fix
    # the family's fix (device memory: batch size, recompute) is not the one given
    assert "device memory" not in info.fix


@pytest.mark.parametrize(
    ("line", "rule", "said"),
    [
        ("[PID: 7] 2026-01-01-00:00:00.000.000 NN_Process_Bin_Error(E30004): The binary file of the user processes on "
         "the device is damaged.", "ENV050", "ECC"),
        ("E39001: [PID: 7] 2026-01-01-00:00:00.000.000 The argument is invalid.", "ENV050", "invalid length"),
        ("[PID: 7] 2026-01-01-00:00:00.000.000 Resource_Error_Insufficient_Host_Memory(EL0018): Failed to allocate "
         # MEM007, the host-memory allocation rule, reads this wording since round 59 (EH0010's `bytes host memory`
         # without "of"): host memory either way, now with the size
         "1024 bytes host memory requested by hdc module.", "MEM007", "bytes 1024"),
        ("[PID: 7] 2026-01-01-00:00:00.000.000 Inner_Error_Queue_Scheduler_Init_Failed(EM9002): Failed to initialize "
         "the queue_schedule process.", "ENV050", "queue_schedule"),
    ],
)
def test_guide_messages_headline(tmp_path, line, rule, said):
    rc = _headline(tmp_path, line + "\n")
    assert rc["rule"] == rule and said in rc["message"]


# GE's external return codes (ge_error_codes.h): three-digit families with GE's own words, under the aclError digits
@pytest.mark.parametrize(
    ("code", "family", "rule", "word"),
    [
        ("145000", "145", "ENV050", "GE_PARAM_INVALID"),  # the existing exact meaning stays
        ("145002", "145", "ENV050", "path"), ("145006", "145", "ENV050", "truncated"),
        # a dynamic input, batch, format, shape or dtype GE refuses at execute is what the caller passed
        ("145011", "145", "NUM030", "input"), ("145012", "145", "NUM030", "size"), ("145013", "145", "NUM030", "gears"),
        ("145020", "145", "NUM030", "format"), ("145021", "145", "NUM030", "shape"), ("145022", "145", "NUM030", "type"),
        ("245000", "245", "MEM040", "memory"), ("245001", "245", "MEM040", "memory"),
        ("545001", "545", "ENV050", "load"), ("545005", "545", "ENV050", "kernel"),
        # unlisted codes of the families keep the family's reading
        ("145099", "145", "ENV050", "GE refused"), ("545099", "545", "ENV050", "internal error of GE"),
    ],
)
def test_ge_return_codes(code, family, rule, word):
    info = lookup(code)
    assert info is not None and info.family == family and info.rule == rule and word in info.meaning
    assert info.known == (not code.endswith("099"))


def test_other_one_digit_acl_codes_keep_their_family():
    # 148049 (ASCEND_OPP_PATH) and 100000 are not GE's: the three-digit families do not take them
    assert lookup("148049").family == "1" and lookup("100000").family == "1"


@pytest.mark.parametrize(
    ("line", "rule", "said"),
    [
        ("aclmdlExecute failed, error code is 145012", "NUM030", "DYNAMIC_INPUT_LENGTH_INVALID"),
        ("load model from file failed, errorCode is 545005", "ENV050", "KERNEL_PARTITION"),
    ],
)
def test_ge_return_code_headline(tmp_path, line, rule, said):
    rc = _headline(tmp_path, line + "\n")
    assert rc["rule"] == rule and said in rc["message"]


# the rest of the runtime's return-code table (rt_error_codes.h)
RUNTIME_RETURN = [
    ("107000", "ENV050", "RT_PARAM_INVALID"), ("107017", "ENV050", "handle"),
    ("207005", "MEM040", "resource"), ("207008", "MEM040", "stream"),
    ("207013", "ENV050", "queue"), ("207015", "ENV050", "repeated"),
    ("507001", "NUM030", "task scheduler"),
    # the code's own words name another area than a failed device task
    ("507021", "PERF010", "profiling"), ("507027", "ENV050", "not registered"), ("507009", "ENV050", "task type"),
    ("507040", "ENV050", "die"),
]


def test_context_release_error_yields_to_the_failure_before_it(tmp_path):
    # Ascend samples#16 (tests/realworld/logs/ascend-samples-16-…): the reset after a failed set device prints 507007;
    # the headline stays on the device that could not be opened
    assert lookup("507007").role == "consequence"
    rc = _headline(tmp_path, "[INFO]  acl init success\n[ERROR]  acl set device 0 failed, errorCode = 507033\n"
                             "[ERROR]  reset device 0 failed, errorCode = 507007\n")
    assert rc["rule"] == "ENV096"


# compile-side codes the corpus's real logs print with their own message
COMPILE_SIDE = [
    ("EC0010", "ENV050", "Python module"), ("E40000", "ENV050", "te/tbe"), ("E40001", "ENV050", "environment variable"),
    ("E40002", "ENV050", "Python version"), ("E40021", "ENV050", "compile an operator"), ("E40024", "ENV050", "Python"),
    ("E20001", "ENV050", "compile"), ("E20002", "ENV050", "ASCEND_OPP_PATH"), ("E16005", "ENV050", "domain_version"),
    ("E90003", "ENV050", "constraint"),
    # a graph output larger than the buffer the caller allocated: the caller's output (as E13031)
    ("E10404", "NUM030", "buffer"),
]


def test_the_reason_under_a_failed_compiler_start_is_the_headline(tmp_path):
    # channy-notes-atc-ec0010-… : EC0010 says which module is missing; ENV259 ("could not initialise TeFusion") is its
    # consequence, printed after it
    rc = _headline(tmp_path, "EC0010: [PID: 129520] 2025-07-08-10:25:28.680.962 Failed to import Python module "
                             "[ModuleNotFoundError: No module named 'decorator'.].\n"
                             "        TraceBack (most recent call last):\n"
                             "        Failed to initialize TeConfigInfo.[FUNC:TeInnerErrMessageReport]\n")
    assert rc["rule"] == "ENV050" and "Python module" in rc["message"] and "decorator" in rc["message"]


# the rest of aclnn's return-code tables
ACLNN_RETURN = [
    ("161001", "NUM030", "nullptr"), ("361001", "NUM030", "runtime"),
    ("561108", "ENV050", "kernel library"), ("561112", "ENV050", "binary kernel library"),
    ("561114", "ENV050", "attributes"), ("561119", "ENV050", "block dim"),
    ("561116", "NUM030", "32 inputs"),
]


def test_aclnn_catch_all_stays_unlisted():
    # 561000 ACLNN_ERR_INNER is aclnn's catch-all: listed, it would outrank the line that says what failed
    assert not lookup("561000").known


# operator-check codes printed as errCode dictionaries / `In op[…]` lines
OPERATOR_CHECK = [
    ("E80000", "NUM030", "parameter"), ("E80012", "NUM030", "dimensions"), ("E80029", "NUM030", "shapes"),
    ("E60108", "NUM030", "prebuild"),
    # the op cannot be compiled this way at all: a constraint of the op, not of the inputs
    ("E61001", "ENV050", "single-op compilation"),
]


@pytest.mark.parametrize(("code", "rule", "word"), RUNTIME_RETURN + COMPILE_SIDE + ACLNN_RETURN + OPERATOR_CHECK)
def test_listed_code_routes_with_its_meaning(code, rule, word):
    info = lookup(code)
    assert info is not None and info.known and info.rule == rule and word in info.meaning
