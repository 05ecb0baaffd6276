"""CANN error codes as data (``msdoctor/data/cann_codes.toml``): a code → its family, meaning, fix and rule.

Two grammars: the 6-character CANN codes (``EI0002``: level E, module letter/digit, 4 digits) and the
numeric ACL/runtime return codes (``507048``). An exact code listed in the data gives its own meaning
(and may name another rule, e.g. a stream-sync time-out → COMM); an unknown code of a known family gets
the family's meaning; a code of no known family is not a CANN code (None).

CUDA's error codes the same way (``msdoctor/data/cuda_errors.toml``, ``cuda_lookup``): cudaError_t / CUresult by
name, by cudaGetErrorString's message after a wrapper's words, or by a number that means the same in every release;
the smaller tables below (HCCL, DCMI, MindIE, ATB, HCCP) only name a code in a finding's description.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class CodeInfo:
    code: str
    family: str
    component: str
    rule: str
    meaning: str
    family_meaning: str
    confirm: str
    fix: str
    known: bool  # the exact code is listed (not only its family)
    role: str = "root"  # consequence: a time-out that waits on something else (a peer, a task)
    internal_code: bool = False  # a catch-all of a table that is not CANN's (cudaErrorUnknown)
    bare: bool = False  # read from a number alone (`cuda error 710`): says less than a line that names the fault
    family_rule: str = ""  # the family's generic rule (where `rule`, the exact code's own, is not in the rule set)

    @property
    def internal(self) -> bool:
        """An internal catch-all (E*9000–E*9999 by the CANN code rules, E*8888 — `EE8888: Inner Error!`, printed as
        `report error module_type=3, module_name=EE8888` next to every runtime API call that fails — or an ACL
        5xxxxx code outside the runtime's 507xxx list): it wraps the real error, which another code or line usually
        names."""
        if self.internal_code:
            return True
        if self.family.startswith("CUDA"):
            return False
        if self.code.startswith("E"):  # E*8888 is the runtime's own `Inner Error!` wrapper of a failed API call
            return self.code[2] == "9" or self.code[2:] == "8888"
        return self.family == "5"

    @property
    def specificity(self) -> int:
        """0 a listed, non-internal code; 1 an unlisted one of its family; 2 an internal catch-all. The runtime's
        internal code (``0x07MMxxxx``) is at best 1: it is the inner echo of a failure the runtime reports outward as
        an ACL or CANN code, which names it as well or better (an `EI0012` SDMA error beside the `rtCode=0x715006c`
        FFTS+ exception of the same task)."""
        if self.internal:
            return 2
        return 1 if (self.code.startswith("0x") or not self.known or self.bare) else 0

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "family": self.family, "component": self.component, "rule": self.rule,
                "meaning": self.meaning, "known": self.known, "internal": self.internal,
                **({"bare": True} if self.bare else {})}  # fmt: skip


@cache
def _toml(resource: str) -> dict[str, Any]:
    """One of the code tables of msdoctor/data, parsed once."""
    return tomllib.loads(resources.files("msdoctor.data").joinpath(resource).read_text(encoding="utf-8"))


def _data() -> dict[str, Any]:
    return _toml("cann_codes.toml")


def family_rules() -> frozenset[str]:
    """The rule ids that report code families (the generic rules)."""
    d = _data()
    fams = (list(d.get("families", {}).values()) + list(d.get("acl_families", {}).values())
            + list(d.get("rt_families", {}).values()))  # fmt: skip
    cuda = list(_cuda_data().get("families", {}).values())
    return frozenset(str(f["rule"]) for f in fams + cuda)


def _info(code: str, family: str, fam: dict[str, Any], exact: dict[str, Any] | None) -> CodeInfo:
    exact = exact or {}
    return CodeInfo(
        code=code, family=family, component=str(fam.get("component", "")),
        rule=str(exact.get("rule") or fam["rule"]),
        meaning=str(exact.get("meaning") or fam.get("meaning", "")),
        family_meaning=str(fam.get("meaning", "")), confirm=str(exact.get("confirm") or fam.get("confirm", "")),
        fix=str(exact.get("fix") or fam.get("fix", "")), known=bool(exact),
        role=str(exact.get("role") or fam.get("role") or "root"), family_rule=str(fam.get("rule", "")),
    )  # fmt: skip


_ACL_NAME_RE = re.compile(r"(ACL_ERROR_[A-Z0-9_]{3,60}):")


@cache
def _acl_names() -> dict[str, str]:
    """The ACL return-code names the data's meanings open with (``ACL_ERROR_RT_SOC_VERSION: …`` → ``507008``)."""
    out: dict[str, str] = {}
    for num, entry in _data().get("acl_codes", {}).items():
        m = _ACL_NAME_RE.match(str(entry.get("meaning", "")))
        if m:
            out.setdefault(m.group(1), str(num))
    return out


# The runtime's internal return code (rtError_t) as it prints it with `%#x`: 0x07, the module byte, 4 hex digits
# (`retCode=0x7020014` = 0x07020014, RT_ERROR_DRV_INVALID_HANDLE).
_RT_CODE_RE = re.compile(r"0X0?7([0-9A-F]{2})([0-9A-F]{4})")


def _rt_lookup(code: str) -> CodeInfo | None:
    """An internal runtime code ``0x07MMxxxx``: its module's family; an exact code listed in the data takes the rule
    (and the confirm / fix) of the ACL code the runtime maps it to (``acl``) unless it names its own rule. Its role
    is always a consequence (below)."""
    m = _RT_CODE_RE.fullmatch(code)
    if m is None:
        return None
    d = _data()
    fam = d.get("rt_families", {}).get("07" + m.group(1))
    if fam is None:
        return None
    key = "07" + m.group(1) + m.group(2)
    exact = dict(d.get("rt_codes", {}).get(key) or {})
    via = lookup(str(exact["acl"])) if exact.get("acl") else None
    if exact:
        name = str(exact.get("name", ""))
        acl = f" (ACL {exact['acl']}" + (f" = {via.code})" if via else ")") if exact.get("acl") else ""
        exact["meaning"] = f"{name}: {exact.get('meaning', '')}{acl}" if name else str(exact.get("meaning", ""))
        if via is not None:
            exact.setdefault("rule", via.rule)
            if via.known:
                exact.setdefault("confirm", via.confirm)
                exact.setdefault("fix", via.fix)
    # the inner echo of a failure the runtime reports outward (an ACL / CANN code of the same call): a consequence,
    # so that the outward code, or the catalogue line that says why, is the root when the log has it
    return replace(_info("0x" + key.lower(), "07" + m.group(1), fam, exact or None), role="consequence")


def lookup_groups(groups: Mapping[str, Any]) -> CodeInfo | None:
    """The code a code-family match handed on (its `family_code`), read as it was read: a CUDA code read from a
    number alone stays `bare` (`family_bare`)."""
    code = groups.get("family_code")
    info = lookup(str(code)) if code else None
    return replace(info, bare=True) if info is not None and groups.get("family_bare") else info


@cache
def lookup(code: str) -> CodeInfo | None:
    """The family (and exact meaning where listed) of a CANN code ``E…``, an ACL return code ``NNNNNN`` or its
    name ``ACL_ERROR_…`` (as acl.h / rt_error_codes.h spell it; a name the data does not list is not looked up),
    or the runtime's internal code ``0x7MMxxxx`` (rtError_t)."""
    d = _data()
    code = code.strip()
    if code.startswith(("cudaError", "CUDA_ERROR_")):
        return _cuda_by_name().get(code)
    code = code.upper()
    if code.startswith("ACL_ERROR_"):
        num = _acl_names().get(code)
        return lookup(num) if num else None
    if code.startswith("0X"):
        return _rt_lookup(code)
    if len(code) == 6 and code[0] == "E" and code[2:].isdigit():
        fam = d.get("families", {}).get(code[:2])
        if fam is None:
            return None
        return _info(code, code[:2], fam, d.get("codes", {}).get(code))
    if len(code) == 6 and code.isdigit():
        fams = d.get("acl_families", {})
        for n in (3, 1):
            fam = fams.get(code[:n])
            if fam is not None:
                return _info(code, code[:n], fam, d.get("acl_codes", {}).get(code))
    return None


# -- CUDA's error codes (msdoctor/data/cuda_errors.toml) ------------------------------------------------


def _cuda_data() -> dict[str, Any]:
    return _toml("cuda_errors.toml")


def _cuda_info(num: str, entry: dict[str, Any]) -> CodeInfo:
    fam = _cuda_data()["families"][entry["family"]]
    msg = entry["messages"][0]
    exact = {"rule": entry.get("rule"), "role": entry.get("role"),
             "meaning": f"{num} = {msg} ({str(fam.get('meaning', '')).split(':')[0]})"}  # fmt: skip
    info = _info(str(entry["name"]), "CUDA", fam, {k: v for k, v in exact.items() if v})
    if entry.get("rule"):  # a code the catalogue has its own rule for: that rule's fix, not the family's
        info = replace(info, fix="", confirm="")
    return replace(info, family="CUDA " + str(entry["family"]), internal_code=bool(entry.get("internal")))


@cache
def _cuda_by_name() -> dict[str, CodeInfo]:
    """cudaError_t and CUresult names → the code's info (the two enums share their numbers)."""
    out: dict[str, CodeInfo] = {}
    for num, entry in _cuda_data().get("codes", {}).items():
        info = _cuda_info(num, entry)
        out[str(entry["name"])] = info
        if entry.get("driver"):
            out[str(entry["driver"])] = info
    return out


@cache
def _cuda_messages() -> tuple[re.Pattern[str], dict[str, CodeInfo]]:
    by_msg = {str(m).lower(): _cuda_info(num, e) for num, e in _cuda_data().get("codes", {}).items() for m in e["messages"]}
    alts = "|".join(re.escape(m) for m in sorted(by_msg, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alts})(?![\w-])", re.IGNORECASE), by_msg


_CUDA_NAME_RE = re.compile(r"\b(?:cudaError[A-Z]\w{2,60}|CUDA_ERROR_[A-Z][A-Z_]{2,60})\b")
_CUDA_NUM_RE = re.compile(r"^\W{0,3}(\d{1,4})(?!\d)")
_CUDA_AFTER_NUM_RE = re.compile(r"\s*(?:$|['\"`:),\].;-])")
_CUDA_GLUE_RE = re.compile(r"[\W\d_]{0,16}")  # what may stand between the wrapper's words and the message
_CUDA_CODE_PAREN_RE = re.compile(r"(?<!\d)\d{1,4} \($")


def cuda_lookup(text: str) -> CodeInfo | None:
    """A CUDA error in the text that follows a wrapper's words (`Cuda failure 217 'peer access is not supported …'`,
    `CUDA error: an illegal memory access …`, `cuda runtime error (2) : out of memory`): by its enum name anywhere
    in the text, else by cudaGetErrorString's message right after them (or quoted, or after a colon,
    within the first 240 characters), else by a number right after the wrapper's words that means the same before
    and after CUDA 10.1 (every listed number from 98 up, and `number_only`)."""
    m = _CUDA_NAME_RE.search(text)
    if m and m.group(0) in _cuda_by_name():
        return _cuda_by_name()[m.group(0)]
    msg_re, by_msg = _cuda_messages()
    for m in msg_re.finditer(text, 0, 240):
        # right after the wrapper's words (only punctuation and a number between: `: `, ` 217 '`, `(700), `), or
        # quoted / after a colon past a source position or a call (`CUDA error …/runtime.cu:25 'named symbol not
        # found'`, `CUDA runtime error in ::cudaMallocAsync(…): out of memory`, `failed. Status: CUDA driver …`)
        before = text[:m.start()]
        # TensorRT's `Cuda Error in allocate: 2 (out of memory)`: the number, then its message in parentheses
        if _CUDA_GLUE_RE.fullmatch(before) or before.endswith(("'", ": ", "' ")) or _CUDA_CODE_PAREN_RE.search(before):
            return by_msg[m.group(0).lower()]
    n = _CUDA_NUM_RE.match(text)
    if n and (int(n.group(1)) >= 98 or int(n.group(1)) in set(_cuda_data().get("number_only", []))):
        entry = _cuda_data()["codes"].get(str(int(n.group(1))))
        if not entry:
            return None
        info = _cuda_by_name()[str(entry["name"])]
        # a program's print ends the number or follows it with its (perhaps cut) message in quotes or after a colon
        # (`Cuda failure 217 'peer access is not supported between these`); a word after it is a sentence's
        # (`getting cuda error 710 now`): that reading is bare
        said = _CUDA_AFTER_NUM_RE.match(text, n.end())
        return replace(info, bare=said is None)
    return None


# -- words that move an operator code's reading to the environment -------------------------------------

# An operator/runtime code (EZ…, EE…, EH…, E3…, E6…, 507xxx: NUM030 by its family) whose own message says the op,
# its binary or the feature is not there for this platform, SoC or package: the environment does not fit, the
# inputs are not at fault (`EZ1001: … Get regInfo failed, The binary_info_config.json of socVersion [ascend310p]
# …`, `EZ9999: … Op Equal does not has any binary.`, `EZ9999 … Parse dynamic kernel config fail.`,
# `E69999: … op[QuantBatchMatmulV3], this platform only support …`, `EE8888 … reason=[feature not support]`,
# `EH9999 [Init][Env]init env failed!`, `Get ACL JitCompile default value failed`). Measured on the corpus
# (2026-12-03, every log file of each case): the phrases occur in 49 cases, all of them environment faults, and
# of the 160 cases whose first code NUM030 reads they move 15 from the wrong area to the right one (108 → 123
# right), none the other way. A bare "only support" is not one of them: a tiling check says `expert count is:
# 128, but currently only support 256` about the inputs.
# Added 2026-12-05 from the leave-out's NUM030 misleaders: `EZ1001: … support for Ascend310B is not implemented`
# (llama.cpp CANN, the aclnn forum; 2 of 2 corpus cases ENV) and `AclNN_Parameter_Error(EZ1001):
# ADD_TO_LAUNCHER_LIST_AICORE failed` — aclnn could not add an AI Core kernel for this dtype/SoC to its launch list,
# the op binary is not there (10 of 10 corpus cases with the phrase are ENV).
# Added 2026-12-05 from the keep-coded leave-out's NUM030 misleaders (aclnn's own words for a kernel or dtype this
# SoC/package lacks; corpus cases whose files hold the phrase, by label): `Cannot find bin of op X, integral key …`
# (5 ENV), a kernel's JSON under `…/kernel/config/ascend910b/` it cannot parse (1 ENV), `should be in dtype support
# list []` — no dtype at all on this SoC (2 ENV), `… is not supported on this/the current …` (10 ENV), `not support
# under keep type mode` (2 ENV), `Io input dtype or format is not supported` (1 ENV), EZ1009's `The dtype or format
# of the actual input or output parameter …` (1 ENV). Not a bare `not implemented for DT_X` (7 ENV, 7 NUM: a
# model that passes a dtype the op never takes is a model bug).
SUPPORT_LIMIT_RE = re.compile(
    r"support for ascend\w* (?:is )?not implemented|ADD_TO_LAUNCHER_LIST_AICORE"
    r"|soc ?version|(?:this|current) (?:platform|soc|chip|product) (?:only )?(?:does not |doesn't |only )?support"
    r"|not support(?:ed)? (?:on|by|in|for) (?:this |the |current )?(?:platform|soc|chip|device|product|npu)"
    r"|does not ha(?:s|ve) any binary|\bno (?:kernel )?binary\b|kernel config|binary_info_config|feature not support"
    r"|init env failed|No parser is registered|no ops kernel|op store"
    r"|(?:opp|op|kernel) (?:package|path|pkg) (?:is )?not (?:found|exist|installed)|ASCEND_OPP_PATH|JitCompile"
    r"|not installed|version (?:mismatch|does not match|not match)"
    r"|please (?:upgrade|update|install) (?:the )?(?:cann|driver|firmware|toolkit|kernels|torch_npu)"
    r"|cannot find bin(?:ary)? (?:of|for) op|/kernel/config/|dtype support list \[\]"
    r"|is not supported on (?:this|the current)|not support(?:ed)? under|(?:dtype|format) is not supported"
    r"|dtype or format of the actual",
    re.IGNORECASE,
)


def support_limit(text: str) -> str | None:
    """The phrase by which an operator error says the platform or package lacks the op (see SUPPORT_LIMIT_RE)."""
    m = SUPPORT_LIMIT_RE.search(text)
    return m.group(0) if m else None


# -- HCCL's own return codes (HcclResult) --------------------------------------------------------------

# A message about an HCCL call and the small return code it gives: torch_npu's `HCCL function error:
# hcclCommInitRootInfoConfig(…), error code is 5`, `OPS function error: HcclAllreduce, error code is 6`,
# MindSpore's `HcclCommInitClusterInfo failed, ret:4`, `… function of the hccl module. ret = 9`. The code
# must follow the HCCL call within the same clause (an ACL code `error code is 507035` has 6 digits: no match).
HCCL_CALL_CODE_RE = re.compile(
    r"(?:\b[hH]ccl\w{2,60}\b|\bhccl module\b|HCCL function error)[^\n]{0,200}?"
    r"(?:error code is|error code|ret\s*[:=]|return code(?: is)?|, error:)\s*(?P<code>\d{1,2})(?!\d)"
)


@cache
def _hccl_codes() -> dict[int, tuple[str, str]]:
    text = resources.files("msdoctor.data").joinpath("hccl_result.toml").read_text(encoding="utf-8")
    return {int(k): (str(v[0]), str(v[1])) for k, v in tomllib.loads(text).get("codes", {}).items()}


def hccl_result(code: int | str) -> tuple[str, str] | None:
    """HcclResult's name and meaning of an HCCL return code (``5`` → ``("HCCL_E_NOT_SUPPORT", "not support
    feature")``), or None for a code HCCL does not define."""
    try:
        return _hccl_codes().get(int(str(code).strip()))
    except ValueError:
        return None


# HCCL's own error number in its plog lines, `errNo[0x0000000005000007]`: HCCL_ERROR_CODE(error) = (SYSTEM_RESERVE_ERROR
# << 32) + (HCCL_MODULE_ID 5 << 24) + (sub-module << 16: HCCL 0, HCOM 1, CLTM 2, custom op 3) + the HcclResult (hcomm
# src/pub_inc/log.h, read with find_string): the low 16 bits are the code of hccl_result.toml.
HCCL_ERRNO_RE = re.compile(r"\berrNo\[0[xX]0{0,9}5(?:0[0-3])(?P<code>[0-9a-fA-F]{4})\]")


def hccl_code_in(text: str) -> tuple[int, str, str] | None:
    """The HCCL return code a message about an HCCL call gives (or HCCL's plog `errNo[0x…050000NN]`), with its
    HcclResult name and meaning."""
    m = HCCL_CALL_CODE_RE.search(text)
    if m is None:
        e = HCCL_ERRNO_RE.search(text)
        found = hccl_result(int(e.group("code"), 16)) if e else None
        return (int(e.group("code"), 16), *found) if e and found else None
    n = int(m.group("code"))
    found = hccl_result(n)
    return (n, *found) if found else None


# -- the driver management interface's (DCMI's) return codes ---------------------------------------------

# A message about a DCMI / npu-smi call and the negative code it gives: npu-smi's `dcmi module initialize failed. ret
# is -8005` (`dcmi model initialized failed, because the device is used. ret is -8020`), a Go component's `err:
# retCode: -8255`, `ret code: -8010`, `errCode=-8020`, an exporter's `dcmi init failed, error code: -8005`. Only the
# codes of msdoctor/data/dcmi_result.toml are named (an unlisted -80xx is left alone), and only after a DCMI word in
# the same line or a `retCode` / `ret code` / `errCode` label, so that another library's `-8001` is not read.
DCMI_CALL_CODE_RE = re.compile(
    r"(?:\bdcmi\b[^\n]{0,160}?(?:ret(?:urn)? (?:is|code)|ret\s*[:=]|error code|err(?:or)?\s*[:=])"
    r"|\b(?:retCode|ret code|errCode)\b)\s*[:=]?\s*(?P<code>-8\d{3})(?!\d)",
    re.IGNORECASE,
)


@cache
def _name_table(resource: str) -> dict[int, tuple[str, str]]:
    """A table of ``code = ["NAME", "meaning"]`` under [codes] of msdoctor/data/<resource> (DCMI's return codes,
    ATB's status)."""
    text = resources.files("msdoctor.data").joinpath(resource).read_text(encoding="utf-8")
    return {int(k): (str(v[0]), str(v[1])) for k, v in tomllib.loads(text).get("codes", {}).items()}


def _named(resource: str, code: int | str) -> tuple[str, str] | None:
    try:
        return _name_table(resource).get(int(str(code).strip()))
    except ValueError:
        return None


def dcmi_result(code: int | str) -> tuple[str, str] | None:
    """DCMI's name and meaning of a driver management return code (``-8020`` → ``("DCMI_ERR_CODE_RESOURCE_OCCUPIED",
    "device resource occupied: …")``), or None for a code the DCMI reference does not list."""
    return _named("dcmi_result.toml", code)


def dcmi_code_in(text: str) -> tuple[int, str, str] | None:
    """The DCMI return code a message about a DCMI / npu-smi call gives, with its name and meaning."""
    for m in DCMI_CALL_CODE_RE.finditer(text):
        found = dcmi_result(m.group("code"))
        if found is not None:
            return (int(m.group("code")), *found)
    return None


# -- MindIE's error codes ---------------------------------------------------------------------------------

# `MIE` + component (2 digits) + level (E error, W warning) + the component's 6-character code, as MindIE prints it in
# brackets: `[MIE04E02041C] [endpoint] Failed to listen …`. Decoded from msdoctor/data/mindie_codes.toml (the MindIE
# error-code reference's field tables); a code is named, it routes no area.
MINDIE_CODE_RE = re.compile(r"\bMIE(?P<comp>0\d)(?P<level>[EW])(?P<body>[0-9A-F]{6})\b")


def _mindie_data() -> dict[str, Any]:
    return _toml("mindie_codes.toml")


def mindie_code(code: str) -> str | None:
    """What a MindIE error code says by its fields (``MIE04E02041C`` → ``MindIE Server error: endpoint, phase
    single-node inference, initialization exception``), or None for a string that is not one."""
    m = MINDIE_CODE_RE.fullmatch(code.strip())
    if m is None:
        return None
    d = _mindie_data()
    comp = d.get("components", {}).get(m.group("comp"))
    if comp is None:
        return None
    b = m.group("body")
    sub, mid, typ = b[:2], b[2:4], b[4:]
    parts: list[str] = []
    if m.group("comp") == "04":
        srv = d.get("server", {})
        parts = [srv.get("sub", {}).get(sub, ""), f"phase {srv['phase'][mid]}" if mid in srv.get("phase", {}) else "",
                 srv.get("type", {}).get(typ, "")]
    elif m.group("comp") == "03":
        mot = d.get("motor", {})
        parts = [mot.get("sub", {}).get(sub, ""), mot.get("type", {}).get(typ, "")]
    elif m.group("comp") == "05":
        llm = d.get("llm", {})
        name = llm.get("sub", {}).get(sub, "")
        parts = [name, llm.get("type", {}).get(name, {}).get(typ, "") if name else ""]
    elif m.group("comp") == "02":
        cli = d.get("client", {})
        parts = [cli.get("category", {}).get(mid, ""), cli.get("type", {}).get(typ, "")]
    elif m.group("comp") == "06":
        parts = [d.get("sd", {}).get("type", {}).get(typ, "")]
    level = "error" if m.group("level") == "E" else "warning"
    detail = ", ".join(p for p in parts if p)
    return f"{comp} {level}" + (f": {detail}" if detail else "")


def mindie_code_in(text: str) -> tuple[str, str] | None:
    """The first MindIE error code in a line that the reference's tables decode, with what it says."""
    for m in MINDIE_CODE_RE.finditer(text):
        said = mindie_code(m.group(0))
        if said is not None:
            return m.group(0), said
    return None


# -- Ascend Transformer Boost's (ATB's) return codes -------------------------------------------------------

# ATB's own failure sentences and the small status they give: operation_base.cpp's `setup check fail, error code: 8`,
# `infer shape check fail, error code: 13`, `setup fail, error code:12`, a runner's `Execute Failed. st: 3`, dicp's
# `execute node[0] fail, error code: 3`, `ATB runtime error code: 12`. A code of three or more digits (dicp's
# `execute node[65516] fail, error code: 65516`) is not an atb::Status and is not read.
ATB_STATUS_RE = re.compile(
    r"(?:(?:check fail|setup fail|execute fail|execute node\[\d{1,6}\] fail(?:ed)?|Execute Failed\.?)"
    r"[^\n]{0,40}?(?:error code:?|st:)|ATB runtime error code:?)\s*(?P<code>\d{1,2})(?!\d)",
    re.IGNORECASE,
)


def atb_status(code: int | str) -> tuple[str, str] | None:
    """atb::ErrorType's name and meaning of an ATB status (``12`` → ``("ERROR_CANN_ERROR", …)``), or None."""
    return _named("atb_status.toml", code)


def atb_code_in(text: str) -> tuple[int, str, str] | None:
    """The atb::Status an ATB failure sentence gives, with its name and meaning; a success (0) is not named."""
    m = ATB_STATUS_RE.search(text)
    found = atb_status(m.group("code")) if m else None
    return (int(m.group("code")), *found) if m and found and int(m.group("code")) != 0 else None


# -- HCCP's (the device network / RDMA process's) negative errno ------------------------------------------

# HCCP's RA layer returns a negative Linux errno: `[ERROR] HCCP(38011,python):… [init][ra_hdc_rdev]ra hdc message
# process failed ret(-67) phy_id(0)` (-67 ENOLINK: the NPU network port is down, as the HCCL guide's EJ0002 FAQ reads
# it), `ra_hdc_typical_mr_reg … ret(-13)` (EACCES), a bind's -98 / -99 (EADDRINUSE / EADDRNOTAVAIL). Read only in an
# HCCP line (the `HCCP(pid,proc)` prefix) or an `ra …` call's message; named with the C library's errno name.
HCCP_ERRNO_RE = re.compile(
    r"(?:\bHCCP\(\d{1,9},[^)\n]{0,60}\)|\bra[_ ][a-z_]{2,40})[^\n]{0,300}?\bret\s*[(\[]\s*-(?P<errno>\d{1,3})\s*[)\]]"
)


def hccp_errno_in(text: str) -> tuple[int, str, str] | None:
    """The negative errno an HCCP / RA message returns, with its name and the C library's text (``-67`` →
    ``(67, "ENOLINK", "Link has been severed")``), or None."""
    import errno as _errno
    import os as _os

    m = HCCP_ERRNO_RE.search(text)
    if m is None:
        return None
    n = int(m.group("errno"))
    name = _errno.errorcode.get(n)
    return (n, name, _os.strerror(n)) if name else None
