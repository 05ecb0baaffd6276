"""An operator code whose own message says the platform or package lacks the op reads as the environment, not
the inputs (SUPPORT_LIMIT_RE in msdoctor/engine/codes.py). The lines are new wordings no catalogue rule knows, so
the generic code reading decides; the real lines the phrases come from are in the corpus (see the regex's
comment)."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import support_limit
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("op[GroupedFoo], the current platform does not support int4 weight.", "current platform does not support"),
        ("Get regInfo failed, the socVersion [ascend310p] is not in the table", "socVersion"),
        ("Op Equal does not has any binary.", "does not has any binary"),
        ("rtStreamCreateWithFlags execute failed, reason=[feature not support]", "feature not support"),
        # llamacpp#18133 and the aclnn forum case (tests/realworld/logs), vllm-ascend#14826's aclnn launcher
        ("CANN error: EZ9903: [PID: 71888] 2025-12-17-18:13:01.238.630 support for Ascend910 is not implemented",
         "support for Ascend910 is not implemented"),
        ("AclNN_Parameter_Error(EZ1001): ADD_TO_LAUNCHER_LIST_AICORE failed.", "ADD_TO_LAUNCHER_LIST_AICORE"),
        # the leave-out's NUM030 misleaders (2026-12-05): vllm-ascend#2197 / the hiascend FlashAttentionScore case,
        # vllm-ascend#10640's empty list, a CANN doc's "not supported on this", paddle#70866, vllm-ascend#6490 and
        # #14166, the ModelBox kernel JSON (lines shortened; the real ones are in tests/realworld/logs)
        ("EZ9999: [PID: 12993] Cannot find bin of op AddRmsNormQuant, integral key 0/1/|float16/ND/.",
         "Cannot find bin of op"),
        ("AclNN_Parameter_Error(EZ1001): Tensor self not implemented for DT_INT32, should be in dtype support list [].",
         "dtype support list []"),
        ("EZ1001: the op X is not supported on the current CANN version", "is not supported on the current"),
        ("Self dtype DT_FLOAT or mat2 dtype DT_FLOAT not support under keep type mode.", "not support under"),
        ("AclNN_Parameter_Error(EZ1001): Io input dtype or format is not supported, get io input info is x(DT_BF16)",
         "format is not supported"),
        ("Execution_Error(EZ1009): Failed to execute operator X. Reason: The dtype or format of the actual input or "
         "output parameter of the operator", "dtype or format of the actual"),
        ("EZ9999 Cannot parse json for config file [/usr/local/Ascend/ascend-toolkit/latest/opp/built-in/op_impl/"
         "ai_core/tbe//kernel/config/ascend910b/transpose.json].", "/kernel/config/"),
        # a dtype the op never takes, with the list it does take: the model passes it (7 corpus cases NUM, 7 ENV)
        ("EZ1001: self not implemented for DT_BFLOAT16, should be in dtype support list [DT_FLOAT16,DT_FLOAT,].", None),
        # about the inputs, not the platform: the tiling's "only support" and a shape check stay NUM
        ("expert count is: 128, but currently only support 256.[FUNC:CheckInputShape]", None),
        ("op[Concat_243], the input shape dims should be equal except merge axis", None),
    ],
)
def test_support_limit_phrases(text, said):
    assert support_limit(text) == said


def test_operator_code_saying_platform_lacks_it_is_env(tmp_path):
    rc = _headline(tmp_path, "RuntimeError: call aclnnGroupedFoo failed, detail:EZ9999: Inner Error!\n"
                             "EZ9999: [PID: 1] 2025-01-01-00:00:00.000.000  op[GroupedFoo], the current platform "
                             "does not support int4 weight.\n")
    assert rc["rule"] == "ENV050"
    assert "the message says current platform does not support" in rc["message"]
    # the fix is the environment's, not the operator family's "give the op inputs it supports"
    assert "op package" in rc["fix"] and "inputs it supports" not in rc["fix"]


def test_bare_inner_error_takes_its_code_message_from_the_next_line(tmp_path):
    # CANN prints `EE9999: Inner Error!` and then the same code with its message: the pair is one error, and
    # when the message says the platform lacks the feature, the headline is the environment's
    rc = _headline(tmp_path, "[ERROR] 2025-01-01 RuntimeError: EE9999: Inner Error!\n"
                             "EE9999: [PID: 1] 2025-01-01 rtFooLaunch failed, feature not support on this soc.\n")
    assert rc["rule"] == "ENV050" and "feature not support" in rc["message"]


def test_operator_code_about_its_inputs_stays_num(tmp_path):
    rc = _headline(tmp_path, "EZ9999: Inner Error!\n"
                             "EZ9999: [PID: 1] 2025-01-01 op[GroupedFoo] tiling: expert num 3 should be 8\n")
    assert rc["rule"] == "NUM030" and "inputs it supports" in rc["fix"]


@pytest.mark.parametrize(
    ("code", "rule"),
    [("561001", "NUM030"), ("561002", "NUM030"), ("561003", "ENV050"), ("561107", "ENV050"), ("561000", "ENV050")],
)
def test_aclnn_inner_codes_by_stage(code, rule):
    # aclnn's inner-error table: infer-shape and tiling refuse the inputs (NUM); finding the kernel and the opp
    # path are the installation (ENV, the 561 family's rule); the bare inner error keeps the family's reading
    from msdoctor.engine.codes import lookup

    info = lookup(code)
    assert info is not None and info.rule == rule


def test_tiling_error_code_alone_heads_as_operator_input(tmp_path):
    rc = _headline(tmp_path, "RuntimeError: npu_foo:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:62 NPU function "
                             "error: call aclnnFooBar failed, error code is 561002\n")
    assert rc["rule"] == "NUM030" and "ACLNN_ERR_INNER_TILING_ERROR" in rc["message"]


@pytest.mark.parametrize(
    ("line", "rule", "meaning"),
    [
        # the runtime error reference's own examples (mirror-cann/runtime docs/zh/error_code_ref), with the code
        # in front as the runtime prints it: a context mismatch is the environment's, as 107003
        # (since round 59 ENV082, the stream/context rule, reads this wording and heads with the call it names)
        ("EE1010: MemCopy2DAsync execution failed because stream does not belong to the current context. Extended "
         "information: stream_id=61, stream_ctx=0x56519b7e0ee0, cur_ctx=0x5651a0428090.", "ENV082", "MemCopy2DAsync"),
        # host / scheduling resources, as EE1013 and EE1023 (MEM049 reads the host semaphore since round 59)
        ("EE1021: The runtime module failed to create host semaphore through API sem_init.", "MEM049", "sem_init"),
        # a stream's task queue over its limit: CANN files it as an execution error, and RT027 (round 59) reads it as
        # the runtime's (the code table routes EE1019 there too)
        ("EE1019: Allocating task info failed. Reason: The number of pending tasks in the stream exceeds the limit.",
         "RT027", "pending tasks"),
        # an invalid argument stays the operator family's (the corpus's EE1003 cases are kernel launches refused for
        # an op's empty input, which NUM049 reads); the reference's own example
        ("EE1003: rtsStreamSetAttribute failed because value -5 for parameter stmAttrId is invalid. Expected value: "
         "[0, 5).", "NUM030", "outside its valid range"),
    ],
)
def test_runtime_reference_codes_report_their_own_meaning(tmp_path, line, rule, meaning):
    rc = _headline(tmp_path, line + "\n")
    assert rc["rule"] == rule and meaning in rc["message"]


@pytest.mark.parametrize(
    ("code", "name"),
    [("561101", "ACLNN_ERR_INNER_CREATE_EXECUTOR"), ("561103", "ACLNN_ERR_INNER_NULLPTR"),
     ("561106", "ACLNN_ERR_INNER_INVALID_IMPL_MODE")],
)
def test_aclnn_inner_codes_name_their_documented_status(code, name):
    # aclnn Return Codes, Table 2: the exact status, not the 561 family's generic text; the family's rule stays
    from msdoctor.engine.codes import lookup

    info = lookup(code)
    assert info is not None and info.meaning.startswith(name) and info.rule == "ENV050"


def test_repeat_finalize_code_routes_to_the_lifecycle_rule(tmp_path):
    # ACL_ERROR_REPEAT_FINALIZE (acl_base.h: 100037, "重复去初始化"): a second aclFinalize in one process is the
    # integration's lifecycle (ENV841), not an operator that failed on the device (the generic code reading, NUM030)
    from msdoctor.engine.codes import lookup

    info = lookup("100037")
    assert info is not None and info.meaning.startswith("ACL_ERROR_REPEAT_FINALIZE") and info.rule == "ENV841"
    rc = _headline(tmp_path, "aclFinalize failed, error code is 100037\n")
    assert rc["rule"] == "ENV841"
