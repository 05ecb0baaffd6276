"""Inference-serving threads on Ascend (round 19): a code that only reports a remote fault, and the MC2 operators'
HCCL resource failure. Log lines are copied exactly from the public threads named beside them."""

from __future__ import annotations

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.codes import lookup
from msdoctor.engine.evaluate import signature_set
from tests.conftest import run_cli

SIGS = signature_set(load_catalogue())

# vllm-project/vllm-ascend#14122 (DeepSeek-V4 DSpark: a kernel's MTE DDR out-of-range, surfaced as 507057)
SUSPECT_REMOTE = ("[ERROR] RUNTIME(18939,):2026-08-12-06:46:00.474.655 [api_c.cc:802]18939 "
                  "rtEventQueryStatus:ErrCode=507057, desc=[suspect remote error], InnerCode=0x701002b")  # fmt: skip
# vllm-project/vllm-ascend#8676 (deepseek-v4-flash-w8a8, aclnnMoeDistributeDispatchV4 failed with 561000)
MC2_HCCL = [
    "[rank4]:[E514 02:02:46.784784000 compiler_depend.ts:444] operator():build/CMakeFiles/torch_npu.dir/"
    "compiler_depend.ts:162 NPU function error: call aclnnMoeDistributeDispatchV4 failed, error code is 561000",
    "[ERROR] 2026-05-14-02:02:46 (PID:8472, Device:4, RankID:-1) ERR00100 PTA call acl api failed.",
    "EZ9999: Inner Error!",
    "EZ9999[PID: 8472] 2026-05-14-02:02:46.251.038 AclNN_Inner_Error(EZ9999):  Nnopbase fails to invoke the "
    "HcclAllocComResourceByTiling function of the hccl module. ret = 4, comm = 0xfffd607f1000.",
]
# a vllm-ascend experiment note (stored public file): device memory ran out before the MC2 buffers
MC2_AFTER_OOM = [
    "Memory_Allocation_Failure(EL0004): Failed to allocate memory.",
    "Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module.",
    "current working operator name is aclnnMoeDistributeDispatchV2",
]


def fired(line: str) -> dict[str, dict[str, str]]:
    return {m.rule.id: m.groups for m in SIGS.match(line)}


def test_507057_reports_a_remote_fault_and_names_no_communication_area():
    info = lookup("507057")
    assert info and info.known and info.role == "consequence" and info.rule != "COMM080"
    hits = fired(SUSPECT_REMOTE)
    assert "COMM080" not in hits and hits["NUM030"]["family_code"] == "507057"


def test_mc2_hccl_resource_failure_family():
    assert fired(MC2_HCCL[3])["COMM084"] == {"function": "HcclAllocComResourceByTiling", "hccl_ret": "4"}
    # later CANN wording (nnopbase indv_hccl_wrapper), and the HcclGetRankId form with the source's typo
    later = ("OP:   [HcclAllocComResourceByTiling] errno[561000] Failed to invoke the HcclAllocComResourceByTiling "
             "function of the hccl module, ret = 1, comm = 0x7efeaee63ec0.")  # fmt: skip
    assert fired(later)["COMM084"]["hccl_ret"] == "1"
    assert fired("Failed to invode the HcclGetRankId function of the hccl module. HcclCom = 0x1")["COMM084"][
        "function"] == "HcclGetRankId"  # fmt: skip
    assert "COMM084" not in fired(MC2_HCCL[0])  # the aclnn 561000 line itself stays with the code family


def test_mc2_hccl_failure_headlines_over_561000_but_yields_to_the_memory_error(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("\n".join(MC2_HCCL) + "\n")
    d = run_cli("logs", "--json", str(log)).json()
    assert d["root_cause"]["rule"] == "COMM084"
    log.write_text("\n".join(MC2_AFTER_OOM) + "\n")
    d = run_cli("logs", "--json", str(log)).json()
    assert d["root_cause"]["rule"] == "MEM014"
