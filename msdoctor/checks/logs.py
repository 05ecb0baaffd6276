"""Cross-rank correlation of the logs of all ranks (rules COMM501–COMM505, source ``log``).

Pure functions of the facts built by :mod:`msdoctor.facts.logs`. The verdict follows shared/faults.md §1K:
when only some ranks report collective or launcher failures, the culprit is among the ranks that did not
(it hung, died or is missing); when a rank failed with an error of its own, the first such rank is the
root cause and every other rank's error is a consequence.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Hit, check_params
from msdoctor.facts.logformats import parse_line

Rank = dict[str, Any]


def _ev(e: Mapping[str, Any] | None) -> Evidence | None:
    if not e:
        return None
    return Evidence(text=str(e.get("text", "")), file=e.get("file"), line=e.get("line"))


def _clock(t: float | None) -> str:
    if t is None:
        return "time unknown"
    return datetime.fromtimestamp(t, tz=UTC).strftime("%H:%M:%S.%f")[:-3]


# A device task that timed out: on its own a root cause (a kernel that never finished), but next to a
# collective time-out of the same process it is that collective's task (the FFTS+/stream task was the
# HCCL op waiting for its peer) and so a consequence too.
# (the runtime's reasons `[aicore timeout]` / `[vector core timeout]` / `[aicpu timeout]` are the same device-task
# time-out, NUM011's reasons: a DeepEP notify-dispatch kernel that waited on a peer it could not reach reports
# `retCode=0x25, [aicore timeout]` beside HCCL's EI0006 socket time-out, afd_demo's DeepEP notes)
TASK_TIMEOUT_RE = re.compile(r"\b50704[678]\b|\b507034\b|\b107020\b|fftsplus timeout|task timeout|"
                             r"(?:aicore|ai core|vector core|aicpu) timeout|"
                             r"internal task times out|stream sync(?:hronize)? time(?:d )?out", re.I)  # fmt: skip


# The runtime's report that a model stream (an offline model / sunk graph run as one task) failed, retCode=0x91,
# wraps the failure of one of its tasks; where the runtime also describes that task with a device-task rule of
# its own (a kernel exception, a failed memory copy: a NUM rule that is not a code family), that line says what
# failed and the wrapper yields to it (CANN's "Memcpy异步拷贝算子执行报错" page: `Task exception! … type=13,
# retCode=0x91` first, then `Memory async copy failed, …`). Without such a line the wrapper keeps its reading.
MODEL_STREAM_WRAPPERS = frozenset({"DATA021"})


# A rule that reads the failing STATEMENT (where the fault happened) rather than the error: a weight loader's
# `….copy_(loaded_weight)` echoed above its exception (CKPT029). It outranks a code family's generic reading of the
# exception (EZ1001's `1536 and 192 cannot broadcast` is the checkpoint's shape, not a numerics fault), but a
# specific rule of another area under it (an out-of-memory raised inside the copy) says what failed: it yields.
STATEMENT_RULES = frozenset({"CKPT029"})

# A report that a user Python function of the dataset pipeline raised (DATA011: `map operation: [PyFunc] failed.`,
# `Exception thrown from user defined Python function in dataset`) wraps whatever the function ran into; a specific
# rule of another area beside it (the card out of memory when the function ran Ascend ops, MindSpore's FAQ on dvpp
# in multiprocess mode) says what failed, and the wrapper yields to it like a statement rule. Alone (a KeyError in
# the user's code) it keeps its reading.
USER_FUNCTION_WRAPPERS = frozenset({"DATA011"})

# The kubelet's admission error `Allocate failed due to rpc error: code = Unknown desc = <message>, which is
# unexpected` (ENV322) wraps whatever message the device plugin returned; where another rule reads that message
# itself (HAMi ascend-device-plugin's `npu-smi set device-share …: npu-smi not found in […] or PATH`, ENV056,
# ascend-device-plugin #103) it says what failed and the wrapper yields to it, whatever its area. Alone (HAMi's
# `parse pod annotation error: unknown uuid: `, HAMi #654) the wrapper keeps its reading.
ADMISSION_WRAPPERS = frozenset({"ENV322"})

# A launcher's report that a worker died of a signal (msrun's `Worker process N exit with exception. Error code: -11.`,
# ENV329: a native crash in the worker) says that it crashed, not in what: a specific rule of another area in the same
# log that names the crashing component (an operator kernel, a compiler pass, a ggml CPU op) says what failed, and the
# report yields to it like a statement rule — even when the launcher's line carries the only time stamp. Alone (a
# crash while garbage-collecting at exit, HyperParallel #253) it keeps its reading.
# Ray's report that a worker process died without an error of its own (MEM069: `Worker exit type: SYSTEM_ERROR …
# Worker unexpectedly exits with a connection error code 2`, usually the OOM killer) is the same kind of report: where
# another area's specific rule reads why the worker could not run (`No module named 'vllm'` on the other node, GPUStack
# #2415), that rule says more.
LAUNCHER_SIGNAL_REPORTS = frozenset({"ENV329", "MEM069"})

# A checkpoint converter's traceback frame (CKPT081) and the shape refusals (each signature rule with its twin) that
# its reshape raises: under the frame CKPT083 reads the refusal as the converter's, and the refusal yields to it.
CONVERTER_RULE = "CKPT081"
CONVERTER_CHECK_RULE = "CKPT083"
CONVERTER_SHAPE_RULES = frozenset({"PAR010", "NUM098", "PAR001", "NUM096"})
# A pickle refusal of a live process group (CKPT092's line) raised under `copy.deepcopy` (PAR089 marks the frames,
# PAR090 reads the pair): a copy of the wrapped model (an EMA of a DDP / FSDP module), not a checkpoint being saved.
DEEPCOPY_MARK_RULE, DEEPCOPY_CHECK_RULE, PICKLE_REFUSAL_RULE = "PAR089", "PAR090", "CKPT092"


# A rule whose line an HCCL report prints in the TraceBack of another, named failure: that failure is what went
# wrong and the echo yields to it. `Transport init error … Create Dest error! creakLink para:rank[15]…dst_rank[1]`
# (COMM027) is listed under `Failed to allocate resource[qp] … Memory resources are exhausted` (EI0007, COMM044):
# the links could not be built because the queue pairs could not be allocated, not because a cable is down
# (vllm-ascend #2754, #5993).
# The generic reports of a kernel that faulted on the device (NUM010's `there is an exception of … aivector error`,
# NUM008's `Aicore kernel execute failed`) yield to COMM079 where the faulting kernel is a cross-rank MoE
# dispatch/combine: its "MTE DDR address out of range" is the peer's memory gone (network fault, peer exited),
# CANN's troubleshooting case collection "网络问题导致Moe Dispatch/Combine算子执行报错". They also yield to ENV973:
# the failed kernel's argument table dumped as all zeros (`[AIC_INFO] args(0 to 9) after execute:0, 0, …`) says the
# kernel never received its arguments — a broken host-to-device copy (ASan on a Linux kernel older than 5.10, CANN
# runtime FAQ), not a fault of the operator.
# The runtime's `Aicore kernel execute failed … fault kernel_name=te_superkernel_…` (NUM008) names only the fused
# kernel of a TorchAir/GE SuperKernel; NUM068 reads the scope (`origin_op_name [sk_<scope>_start_…_end_…]`) and the
# faulting sub-operator (`symbol name=te_<op>_…`) of the same fault, so NUM008 yields to it (torchair docs,
# superkernel_cases.md).
# bitsandbytes' import-time report that its CPU-only library does not load (ENV806) yields to the quantizer's own
# refusal `No GPU found. A GPU is needed for quantization.` (ENV047) where both are printed: the refusal names what
# the job asked of it (MagicQuill #15); without it ENV806 reads the consequence that follows (Ascend/pytorch #10).
YIELDS_TO: dict[str, frozenset[str]] = {"COMM027": frozenset({"COMM044"}),
                                        # MindSpore's `RANK_ID has not been exported` in a HyperParallel job
                                        # that a PyTorch launcher started: the backend choice is the cause
                                        # (hyper-parallel #740)
                                        "RT003": frozenset({"ENV883"}),
                                        "NUM010": frozenset({"COMM079", "ENV973"}), "NUM008": frozenset({"COMM079", "ENV973", "NUM068"}),
                                        "ENV806": frozenset({"ENV047"}),
                                        # `Cannot copy out of meta tensor` (CKPT068, lazy loading) in a line that
                                        # also names ZeRO-3 with QLoRA / 4-bit (PAR053): the partitioned weights,
                                        # not the loader (qwen-vl-series-finetune #7, fixed by ZeRO-2)
                                        # ... and in a line that names FSDP2 / fully_shard leaving a rank empty
                                        # (PAR050): the shard layout, not the loader (pytorch #164554, round 75)
                                        "CKPT068": frozenset({"PAR053", "PAR050"}),
                                        # triton's `Failed to compile …/launcher_cxx11abi1.cxx, error: In file
                                        # included from …` wraps the compiler's own diagnostics: where a rule reads
                                        # the diagnostic (a torch_npu or triton header that does not compile against
                                        # the installed CANN headers) that says what failed, not a compiler crash
                                        # (vllm-ascend #6245)
                                        "ENV816": frozenset({"ENV308", "ENV176"}),
                                        # `rtGetDevMsg execution failed, the context is a null pointer` is the
                                        # runtime fetching the error message after the device could not be
                                        # opened (TsdOpen / driver open failed under aclrtSetDevice 507033):
                                        # the open failure is the cause (PTOAS #424, #948)
                                        "ENV082": frozenset({"ENV701", "ENV770"}),
                                        # a synchronise refused under graph capture (107027) that the debug
                                        # switch ASCEND_LAUNCH_BLOCKING=1 forced (vllm-ascend #2138)
                                        "NUM047": frozenset({"ENV824"}),
                                        # torch_npu's `ERR00007 PTA feature not supported` tail under its graph-capture
                                        # guard: the guard's line names what was refused — an aclop operator with no
                                        # capturable implementation (`Cannot run aclop operators during NPU graph
                                        # capture. Current working aclop is Fill`, ENV280, vllm-ascend #3960) or a call
                                        # the captured code must not make (`Not support Generator … during NPU graph
                                        # capture`, NUM047, sgl-kernel-npu #138)
                                        "ENV085": frozenset({"ENV280", "NUM047"}),
                                        # an ATB operation that cannot be created because the caller used
                                        # torch_npu's unsupported ATB example interface (Ascend/pytorch #94)
                                        "NUM060": frozenset({"ENV835"}),
                                        # vLLM-Ascend's `Mooncake transfer failed for send requests` (COMM072)
                                        # printed because the handshake could not resolve the peer's address
                                        # (`failed to get IP address of peer server …`, RT011): the address
                                        # configuration is the cause (Mooncake #2161); Mooncake's `Failed to
                                        # connect to target: …, status: 103900` whose ADXL message says the peer
                                        # is the local device itself (`not support connect with self device`,
                                        # COMM708): two processes on one NPU, not an unreachable peer (Mooncake #2300)
                                        "COMM072": frozenset({"RT011", "COMM708"}),
                                        # a PTOAS validation program killed by SIGSEGV says only that it crashed;
                                        # the samples of the same run that printed their device exception or
                                        # their wrong output say what the kernel did (PTOAS #704, #761, #837)
                                        "NUM055": frozenset({"NUM010", "NUM011", "NUM056"}),
                                        # aclrtSetDevice's invalid-device code (107001) when the runtime could
                                        # not map the id through the driver: the driver is not loaded (runtime
                                        # FAQ "aclrtSetDevice调用失败", 现象2)
                                        "RT013": frozenset({"ENV701"}),
                                        # LMCache-Ascend's `register ptr failed` after the driver refused the
                                        # HAL registration (`Unable to halHostRegister: 65534`): a driver older
                                        # than 24.1.0, not a buffer too large (LMCache-Ascend #91)
                                        "MEM024": frozenset({"ENV276"}),
                                        # torch_npu's explanation line of 107001 (`Invalid device ID.`) is read
                                        # only when the code line above it is cut or mangled; where that line
                                        # is readable the runtime-code rules report it (ENV050, RT004, RT013)
                                        "RT019": frozenset({"ENV050", "RT004", "RT013"}),
                                        # an operator's generic refusal (`X do tiling failed`, `Tiling failed`) where
                                        # the same report names why: the HCCL buffer a MoE dispatch must fit in is too
                                        # small (COMM073, vllm-ascend #5287), the query's head count differs from the
                                        # kernel's (PAR017, sglang #23572), the op package has no tiling for this chip
                                        # (ENV042), the kernel binary does not register (ENV043), the attention
                                        # kernel's actual-sequence-length metadata disagrees with its tensors (NUM063,
                                        # vllm-ascend #6076, #9359) — whatever order a paste keeps (a JSON string keeps
                                        # none); these are the rules the corpus shows beside NUM062
                                        "NUM062": frozenset({"COMM073", "PAR017", "ENV042", "ENV043", "NUM063"}),
                                        # the device's `Vm fault failed` (NUM139, an out-of-bounds access) where the
                                        # same fault could not even be handed to the host process (`Host page fault
                                        # send message fail`, COMM154): the process had ended while its AIV collectives
                                        # ran — HCCL's HCCL_OP_EXPANSION_MODE page, Ctrl+C — and the faults are its
                                        # aftermath
                                        "NUM139": frozenset({"COMM154"}),
                                        # CANN's TBE compile daemons reporting `main process disappeared` while the
                                        # interpreter shuts down a job that never shut its engine / Ray down (vLLM's
                                        # LLMEngine.__del__ at exit, TBE's own daemon_process cleanup traceback):
                                        # exit-time noise of that unclean exit, not a kill (vllm-ascend #198, verl #3316)
                                        # … and after the driver printed the run's final result (verl's
                                        # `Final validation metrics`, a Ray Train `Result(…)`), ENV979 (verl #2012)
                                        "MEM016": frozenset({"ENV311", "ENV979"}),
                                        # NCCL's `unhandled cuda error` (COMM710) says only that a CUDA call inside
                                        # NCCL failed; the NCCL WARN line a rule reads says which: GPUs without peer
                                        # access (`failed to open CUDA IPC handle : 217`, ENV952, ray_lightning #24),
                                        # NVLS multicast refused (ENV911), no memory for its buffers (MEM050), a kernel
                                        # fault or device assert reported at NCCL's next CUDA call (RT022, NUM124),
                                        # a capture violation (NUM077) — whichever rank's line a paste prints first
                                        "COMM710": frozenset({"ENV952", "ENV911", "MEM050", "RT022", "NUM124", "NUM077"}),
                                        # cuBLAS' handle creation failing (`CUBLAS_STATUS_ALLOC_FAILED when calling
                                        # cublasCreate(handle)`, MEM038) right after an out-of-range embedding index:
                                        # the asynchronous fault of the lookup surfaces at the next library call; the
                                        # CPU rerun's `IndexError: index out of range in self` (NUM064) or the kernel's
                                        # device-side assert (NUM124) in the same paste says what failed
                                        # (transformers #12935)
                                        "MEM038": frozenset({"NUM064", "NUM124"}),
                                        # a shape refusal raised under a checkpoint converter's frame (CKPT083 reads
                                        # the pair): the converter's split, not the model's code nor a job's
                                        # sharding (Pai-Megatron-Patch #167, #544)
                                        **dict.fromkeys(CONVERTER_SHAPE_RULES, frozenset({CONVERTER_CHECK_RULE})),
                                        # a process group's pickle refusal under copy.deepcopy (PAR090 reads the pair):
                                        # an EMA copy of the wrapped model, not a save (pytorch #76927, tutel #177)
                                        PICKLE_REFUSAL_RULE: frozenset({DEEPCOPY_CHECK_RULE})}  # fmt: skip

# A rule that reads a SETTING rather than an error (a launch script's `export ASCEND_LAUNCH_BLOCKING=1`, ENV824) is
# the cause only of the failures listed here: among a rank's root events it yields to any other rule but those; in
# the verdict (commands/logs.py) it is shown as context, an info finding, unless one of those failures is in the log.
# A call echoed in a traceback is read the same way: torch_npu's ATB example interface `_npu_matmul_add_fp32`
# (ENV835) explains only the ATB creation failure it leads to (NUM060), not any other error under it.
SETTING_RULES: dict[str, frozenset[str]] = {"ENV824": frozenset({"NUM047"}), "ENV835": frozenset({"NUM060"})}


def yields_to_task(rule: str, others: Iterable[str]) -> bool:
    """A model-stream wrapper beside a device-task rule (NUM, not a code family) of the same log yields to it;
    a statement rule, a user-function wrapper or a launcher's signal report beside a specific rule of another area
    yields to that rule;
    a rule listed in YIELDS_TO yields to the rules named there; a setting rule (SETTING_RULES) yields to any
    other rule but the failures it causes; an admission wrapper (ADMISSION_WRAPPERS) yields to any other specific
    rule of the log, of any area (the one that reads the message it wraps)."""
    if rule in YIELDS_TO:
        return any(o in YIELDS_TO[rule] for o in others)
    if rule in SETTING_RULES:
        rest = [o for o in others if o != rule]
        return bool(rest) and not any(o in SETTING_RULES[rule] for o in rest)
    beside_other_area = rule in STATEMENT_RULES or rule in USER_FUNCTION_WRAPPERS or rule in LAUNCHER_SIGNAL_REPORTS
    if not beside_other_area and rule not in ADMISSION_WRAPPERS and rule not in MODEL_STREAM_WRAPPERS:
        return False
    from msdoctor.engine.codes import family_rules

    generic = family_rules()
    if rule in MODEL_STREAM_WRAPPERS:
        return any(o.startswith("NUM") and o not in generic and o not in MODEL_STREAM_WRAPPERS for o in others)
    specific = [o for o in others if o not in generic and not o.endswith(("097", "099"))]
    if beside_other_area:
        return any(o[:-3] != rule[:-3] for o in specific)
    return any(o != rule for o in specific)  # an admission wrapper


def is_collective_timeout(e: Mapping[str, Any]) -> bool:
    return str(e.get("rule") or "").startswith("COMM") and e.get("role") == "consequence"


def demote_task_timeouts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Root events that are device-task time-outs become consequences when a collective time-out is present."""
    if not any(is_collective_timeout(e) for e in events):
        return events
    return [dict(e, role="consequence") if e.get("role") == "root" and TASK_TIMEOUT_RE.search(str(e.get("text", "")))
            else e for e in events]  # fmt: skip


def terminal(rank: Rank) -> tuple[str, dict[str, Any] | None]:
    """How a rank's log ends after its last progress line: root / unclassified / consequence / silent."""
    after = demote_task_timeouts(rank.get("after_progress") or [])
    roots = [e for e in after if e.get("role") == "root" and e.get("severity") == "error"]
    if roots:
        names = [str(e.get("rule") or "") for e in roots]
        return "root", _most_specific([e for e in roots if not yields_to_task(str(e.get("rule") or ""), names)] or roots)
    roots = [e for e in after if e.get("role") == "root" and e.get("severity") == "warning"]
    cons = [e for e in after if e.get("role") == "consequence"]
    if cons:
        rules = [str(e.get("rule") or "") for e in cons]
        kept = [e for e in cons if not yields_to_task(str(e.get("rule") or ""), rules)]
        return "consequence", (kept or cons)[0]
    unclassified = [e for e in after if e.get("role") == "unclassified"]
    if unclassified:  # prefer the Python exception that ended the process over a stray ERROR line
        exc = [e for e in unclassified if "Error:" in e.get("text", "") or "Exception:" in e.get("text", "")]
        return "unclassified", (exc or unclassified)[-1 if exc else 0]
    if roots:
        return "root", roots[0]
    return "silent", None


SAME_FAULT_S = 10.0  # root errors this close to the first one are lines of the same fault

# "a kernel raised an exception": within one CANN block (one time stamp) the generic device-exception report
# yields to a rule that says more about the same fault — the kernel library that failed to load (ENV054), the
# task that timed out (NUM011); likewise "an operator failed to compile" (ENV016) yields to the compiler's
# check that says which input it refused (NUM037), as does MindSpore's per-kernel wrapper "Single op compile failed, op:"
# (NUM073), and BiShengIR's "Failed to run BiShengHIR pipeline" (NUM024)
# yields to the pass error that says why (a UB overflow, NUM037; an unknown chip, ENV711), and Triton's front-end
# wrapper "CompilationError: at L:C:" (NUM045) to the exception it prints under the kernel source when a rule reads
# that exception (the back end declares no fp8 types, ENV139). Both choices of the most specific line use it: a
# rank's root event here, the headline finding in commands/logs.py.
BLOCK_GENERIC = frozenset({"NUM010", "ENV016", "NUM024", "NUM073", "NUM045"})


def _most_specific(roots: list[dict[str, Any]]) -> dict[str, Any]:
    """The first root error, or a more specific line of the same fault: a catalogue rule before a generic
    code-family rule, a listed code before an internal catch-all (E*9999), and among lines of one time stamp
    a rule that refines its block before the block's generic report (BLOCK_GENERIC)."""
    from msdoctor.engine.codes import family_rules, lookup_groups

    generic = family_rules()
    t0 = roots[0].get("time")
    near = [e for e in roots if t0 is None or e.get("time") is None or float(e["time"]) - float(t0) <= SAME_FAULT_S]

    def key(ie: tuple[int, dict[str, Any]]) -> tuple[int, int, float, bool, int]:
        i, e = ie
        info = lookup_groups(e.get("groups") or {})
        t = e.get("time")
        return (int(e.get("rule") in generic), info.specificity if info else 0,
                float(t) if t is not None else float("inf"), e.get("rule") in BLOCK_GENERIC, i)  # fmt: skip

    return min(enumerate(near), key=key)[1]


def clock_offsets(facts: Facts, threshold_s: float) -> tuple[dict[str, float], float]:
    """Per-rank clock offsets when the ranks' clocks disagree (else zeros), and the observed spread.

    Every rank logs `Cluster is successfully initialized` when the scheduler completes the topology, i.e.
    within seconds of each other; a larger spread means the hosts' clocks differ.
    """
    per_rank: dict[str, float] = (facts.get_known("logs.clock") or {}).get("per_rank") or {}
    if len(per_rank) < 2:
        return {}, 0.0
    spread = max(per_rank.values()) - min(per_rank.values())
    if spread <= threshold_s:
        return {}, spread
    mid = statistics.median(per_rank.values())
    return {r: t - mid for r, t in per_rank.items()}, spread


def _aligned(e: Mapping[str, Any] | None, rank: str, offsets: Mapping[str, float]) -> float:
    if not e or e.get("time") is None:
        return float("inf")
    return float(e["time"]) - offsets.get(rank, 0.0)


def verdict(facts: Facts, params: Mapping[str, Any]) -> dict[str, Any]:
    """The root-cause verdict over all ranks (shared by the check functions below and the timeline)."""
    ranks: dict[str, Rank] = facts.need("logs.ranks")
    launcher = facts.get_known("logs.launcher") or {"events": []}
    missing: list[int] = facts.get_known("logs.missing_ranks") or []
    offsets, spread = clock_offsets(facts, float(params.get("clock_skew_s", 10.0)))
    states = {r: terminal(v) for r, v in ranks.items()}
    failed = {r: e for r, (k, e) in states.items() if k in ("root", "unclassified")}
    waiting = {r: e for r, (k, e) in states.items() if k == "consequence"}
    silent = [r for r, (k, _) in states.items() if k == "silent"]
    named: dict[int, list[str]] = {}
    for r, v in ranks.items():
        for e in v.get("after_progress") or []:
            if e.get("role") == "consequence":
                for p in e.get("peers", []):
                    if str(p) != r:
                        named.setdefault(p, []).append(r)
    sched = [e for e in launcher.get("events", []) if e.get("role") == "consequence" and e.get("peers")]
    out: dict[str, Any] = {"states": {r: k for r, (k, _) in states.items()}, "offsets": offsets,
                           "clock_spread_s": spread, "named": named, "scheduler": sched[:3]}  # fmt: skip
    if failed:
        pool = {r: e for r, e in failed.items() if states[r][0] == "root"} or failed
        culprit = min(pool, key=lambda r: (_aligned(pool[r], r, offsets), int(r)))
        event = pool[culprit]
        assert event is not None  # failed ranks always carry their event
        same = sorted((r for r, e in failed.items() if r != culprit and _same_fault(e or {}, event)), key=int)
        out.update(kind="failed", rank=int(culprit), event=event, same=same,
                   consequences=sorted({int(r) for r in list(waiting) + list(failed)} - {int(culprit)}))  # fmt: skip
        return out
    if waiting:
        cands = [int(r) for r in silent] + list(missing)
        if not cands and len({_step(ranks[r]) for r in ranks}) > 1:
            cands = [int(r) for r in ranks]  # everyone reports: the one behind stopped first
        if cands:
            def score(r: int) -> tuple[int, int, float, int]:
                v = ranks.get(str(r))
                step = _step(v) if v else -1
                last = (v.get("progress") or {}).get("time") if v else None
                return (-len(named.get(r, [])), step, last if last is not None else float("inf"), r)

            culprit_i = min(cands, key=score)
            out.update(kind="stopped", rank=culprit_i, event=None, missing=culprit_i in missing,
                       consequences=sorted(int(r) for r in waiting if int(r) != culprit_i))  # fmt: skip
            return out
        firsts = [_aligned(e, r, offsets) for r, e in waiting.items()]
        known = [t for t in firsts if t != float("inf")]
        out.update(kind="all", rank=None, spread_s=(max(known) - min(known)) if known else None,
                   consequences=sorted(int(r) for r in waiting))  # fmt: skip
        return out
    out.update(kind="none", rank=None)
    return out


def _step(rank: Rank | None) -> int:
    p = (rank or {}).get("progress") or {}
    return int(p["step"]) if p.get("step") is not None else -1


def _same_fault(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if a.get("rule") and a.get("rule") == b.get("rule"):
        return True
    return not a.get("rule") and not b.get("rule") and a.get("text", "")[:60] == b.get("text", "")[:60]


def _progress_words(rank: Rank | None) -> str:
    p = (rank or {}).get("progress")
    if not p:
        return "it logged no progress line"
    return f"its last progress was step {p.get('step')} (`{p.get('text', '')[:80]}`, {_clock(p.get('time'))})"


def _scheduler_words(v: Mapping[str, Any], culprit: int | None) -> tuple[list[str], list[Evidence]]:
    words: list[str] = []
    evidence: list[Evidence] = []
    for e in v.get("scheduler", [])[:2]:
        blamed = [p for p in e.get("peers", []) if p != culprit]
        if blamed:
            words.append(f"the scheduler's `{_quote(e)}` names node {', '.join(map(str, blamed))}: a consequence "
                         f"(that rank exited after its own failure, so its heartbeat stopped first)")  # fmt: skip
            ev = _ev(e)
            if ev:
                evidence.append(ev)
    return words[:1], evidence[:1]


def _quote(e: Mapping[str, Any]) -> str:
    """The message part of an evidence line (without the level/pid/time/source prefix), shortened."""
    body = parse_line(str(e.get("text", ""))).message.strip()
    return body if len(body) <= 110 else body[:109] + "…"


def _skew_words(v: Mapping[str, Any]) -> str:
    if not v.get("offsets"):
        return ""
    return (f" Clocks disagree between ranks by up to {v['clock_spread_s']:.0f} s; times were aligned on the "
            f"moment every rank joined the cluster before ordering.")  # fmt: skip


@check_params(clock_skew_s=float)
def rank_stopped(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM501: a rank stopped making progress (hung, died silently, or has no log) and others waited for it."""
    v = verdict(facts, params)
    if v["kind"] != "stopped":
        return
    ranks: dict[str, Rank] = facts.need("logs.ranks")
    culprit: int = v["rank"]
    cr = ranks.get(str(culprit))
    chain: list[str] = []
    evidence: list[Evidence] = []
    waiters = v["named"].get(culprit, [])
    for w in sorted(set(waiters), key=int)[:3]:
        e = next((x for x in ranks[w].get("after_progress", []) if culprit in x.get("peers", [])), None)
        if e:
            chain.append(f"rank {w} waited for data from rank {culprit} (`{_quote(e)}`, {_clock(e.get('time'))})")
            ev = _ev(e)
            if ev:
                evidence.append(ev)
    if len(set(waiters)) > 3:
        chain.append(f"… and {len(set(waiters)) - 3} more rank(s) waited for rank {culprit}")
    unreadable = [k for k in facts.get_known("logs.skipped") or [] if k.get("rank") == culprit]
    if unreadable:
        k = unreadable[0]
        chain.append(f"rank {culprit}'s log {k.get('file')} could not be read ({k.get('reason')}): "
                     f"its silence may be that file's, not the rank's — read it before blaming rank {culprit}")
    elif v.get("missing"):
        chain.append(f"rank {culprit} has no log at all")
    if not v.get("missing"):
        chain.append(f"rank {culprit} logged no error; {_progress_words(cr)}")
        ev = _ev((cr or {}).get("progress"))
        if ev:
            evidence.append(ev)
        peers_steps = sorted({_step(ranks[r]) for r in ranks if r != str(culprit)})
        if peers_steps and cr and cr.get("progress"):
            chain.append(f"the other ranks reached step {peers_steps[-1]}" +
                         (" too, then blocked in the next collective" if peers_steps[-1] == _step(cr) else ""))  # fmt: skip
    words, sev = _scheduler_words(v, culprit)
    chain.extend(words)
    evidence.extend(sev)
    chain.append(f"→ rank {culprit} is the likely culprit")
    msg = (f"rank {culprit} stopped making progress without an error; "
           f"{len(v['consequences'])} rank(s) failed waiting for it ({_list(v['consequences'])}).{_skew_words(v)}")  # fmt: skip
    yield Hit(message=msg, evidence=tuple(evidence), rank=culprit,
              step=_step(cr) if cr and cr.get("progress") else None,
              data={"root_cause": {"rank": culprit, "signature": None, "consequences": v["consequences"],
                                   "chain": chain, "missing": bool(v.get("missing"))}})  # fmt: skip


@check_params(clock_skew_s=float)
def rank_failed_first(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM502: a rank failed with an error of its own before the others; theirs are consequences."""
    v = verdict(facts, params)
    if v["kind"] != "failed":
        return
    ranks: dict[str, Rank] = facts.need("logs.ranks")
    if len(ranks) < 2:  # "failed first" needs others to fail after it; one process gets its first error instead
        return
    culprit: int = v["rank"]
    e = v["event"]
    label = e.get("rule") or "an unclassified error"
    chain = [f"rank {culprit} failed first with {label}: `{_quote(e)}` ({_clock(e.get('time'))}, "
             f"{e.get('file')}:{e.get('line')}); {_progress_words(ranks.get(str(culprit)))}"]  # fmt: skip
    evidence = [x for x in (_ev(e),) if x]
    if v["same"]:
        chain.append(f"rank(s) {_list([int(r) for r in v['same']])} failed with the same error later: the fault is in "
                     f"code or data every rank shares, not in one rank")  # fmt: skip
        other = ranks[v["same"][0]]
        ev = _ev(terminal(other)[1])
        if ev:
            evidence.append(ev)
    others = [c for c in v["consequences"] if str(c) not in v["same"]]
    if others:
        chain.append(f"rank(s) {_list(others)} only report consequences (collective or launcher failures)")
    words, sev = _scheduler_words(v, culprit)
    chain.extend(words)
    evidence.extend(sev)
    msg = f"rank {culprit} failed first ({label}); {len(v['consequences'])} other rank(s) failed after it.{_skew_words(v)}"
    yield Hit(message=msg, evidence=tuple(evidence), rank=culprit, step=None,
              data={"root_cause": {"rank": culprit, "signature": e.get("rule"), "consequences": v["consequences"],
                                   "same_error": [int(r) for r in v["same"]], "chain": chain,
                                   "unclassified": not e.get("rule")}})  # fmt: skip


@check_params()
def ranks_missing(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM503: the world size says N ranks, but some ranks left no log at all."""
    missing: list[int] = facts.need("logs.missing_ranks")
    world: int = facts.need("logs.world_size")
    if not missing:
        return
    yield Hit(message=f"{len(missing)} of {world} rank(s) have no log: {_list(missing)}",
              evidence=(Evidence(text=f"world size {world}; logs found for {world - len(missing)} rank(s)",
                                 fact="logs.missing_ranks"),),
              data={"missing": missing[:1000]})  # fmt: skip


@check_params(clock_skew_s=float, collective_timeout_s=float | None)
def all_ranks_timed_out(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM504: every rank reports collective failures and none is behind: the network or a slow peer (§1K)."""
    v = verdict(facts, params)
    if v["kind"] != "all":
        return
    ranks: dict[str, Rank] = facts.need("logs.ranks")
    if len(v["consequences"]) < 2:  # "every rank failed together" needs at least two ranks
        return
    timeout = float(params.get("collective_timeout_s", 30.0))
    spread = v.get("spread_s")
    evidence = []
    for r in sorted(ranks, key=int)[:3]:
        ev = _ev(terminal(ranks[r])[1])
        if ev:
            evidence.append(ev)
    if spread is not None and spread > timeout:
        msg = (f"all {len(v['consequences'])} ranks report collective failures, spread over {spread:.0f} s (> the "
               f"{timeout:.0f} s timeout): one rank was slow to arrive — look for a rank doing extra work (save, eval, data)")  # fmt: skip
    else:
        when = f" within {spread:.1f} s of each other" if spread is not None else ""
        msg = (f"all {len(v['consequences'])} ranks report collective failures{when} and all reached the same step: "
               f"no single rank stopped first — suspect the network/links (`error cqe`, link flaps) or the launcher")  # fmt: skip
    yield Hit(message=msg, evidence=tuple(evidence),
              data={"root_cause": None, "reason": msg, "ranks": v["consequences"][:1000]})


@check_params(clock_skew_s=float | None)
def clock_skew(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM505: the ranks' clocks disagree; cross-rank order uses aligned times."""
    offsets, spread = clock_offsets(facts, float(params.get("clock_skew_s", 10.0)))
    if not offsets:
        facts.need("logs.clock")
        return
    worst = sorted(offsets.items(), key=lambda kv: -abs(kv[1]))[:5]
    yield Hit(message=f"clocks disagree by up to {spread:.1f} s between ranks; ordering uses per-rank time aligned "
                      f"on the cluster start (worst: " + ", ".join(f"rank {r} {o:+.1f} s" for r, o in worst) + ")",
              evidence=(Evidence(text="`Cluster is successfully initialized` logged at " +
                                 ", ".join(f"rank {r}: {_clock(facts.need('logs.clock')['per_rank'][r])}" for r, _ in worst[:3]),
                                 fact="logs.clock"),),
              data={"offsets": dict(worst)})  # fmt: skip


def _list(ranks: list[int], n: int = 8) -> str:
    head = ", ".join(str(r) for r in ranks[:n])
    return head + (f", … {len(ranks) - n} more" if len(ranks) > n else "")


# -- the fallback: the area of an error no rule recognises (rules COMM099 … PERF099) ----------------


def first_unclassified(facts: Facts) -> dict[str, Any] | None:
    """The first error line no rule recognised (an exception line first), or None."""
    evs = unclassified_events(facts)
    if not evs:
        return None
    exc = [e for e in evs if "Error" in e.get("text", "") or "Exception" in e.get("text", "")]
    return (exc or evs)[0]


def unclassified_events(facts: Facts) -> list[dict[str, Any]]:
    evs: list[dict[str, Any]] = []
    for v in (facts.get_known("logs.ranks") or {}).values():
        evs.extend(e for e in v.get("after_progress") or [] if e.get("role") == "unclassified")
    evs.extend(e for e in (facts.get_known("logs.launcher") or {}).get("events", []) if e.get("role") == "unclassified")
    return evs


def error_block(e: Mapping[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """The error line and up to 2 error lines of its block (the next lines of the same file within 2 lines)."""
    line, file = int(e.get("line") or 0), e.get("file")
    nxt = sorted((x for x in events if x.get("file") == file and line < int(x.get("line") or 0) <= line + 2),
                 key=lambda x: int(x.get("line") or 0))  # fmt: skip
    return [str(e.get("text", ""))] + [str(x.get("text", "")) for x in nxt[:2]]


def _specific_hit(facts: Facts) -> bool:
    """A signature rule recognised an error that is a root cause: a specific rule then outranks the fallback.
    A warning (a CPU fallback, a deprecation) or a consequence (a collective that failed because of something
    else, torch_npu's `ERR02200 DIST call hccl api failed`) does not say what went wrong: the fallback still
    reads the error no rule knows."""
    for h in facts.get_known("logs.hits") or []:
        firsts = h.get("firsts") or [h.get("first") or {}]
        if any(f.get("severity") == "error" and f.get("role") != "consequence" for f in firsts):
            return True
    return False


MAX_BLOCKS = 5  # error blocks the fallback reads, past those whose wording names no area


def fallback_candidates(facts: Facts) -> list[dict[str, Any]]:
    """The unrecognised errors in the order the fallback reads them: exception lines first, then the rest."""
    evs = unclassified_events(facts)
    exc = [e for e in evs if "Error" in e.get("text", "") or "Exception" in e.get("text", "")]
    return exc + [e for e in evs if e not in exc]


def classify_first(facts: Facts) -> tuple[dict[str, Any], list[str], Any] | None:
    """The first unrecognised error whose block's wording names an area (reading past up to MAX_BLOCKS - 1
    blocks that name none: a generic `RuntimeError: … failed` before the line that says what), or None."""
    from msdoctor.facts.logfamily import by_layout, classify

    evs = unclassified_events(facts)
    read: set[tuple[Any, int]] = set()  # lines already read as part of an earlier block
    blocks = 0
    for e in fallback_candidates(facts):
        if (e.get("file"), int(e.get("line") or 0)) in read or e.get("echo"):
            continue  # an echo's words (the operator it names) are not the error's: the word statistics still read it
        block = error_block(e, evs)
        line = int(e.get("line") or 0)
        read.update((e.get("file"), line + i) for i in range(3))
        c = by_layout(classify(block, frames=e.get("frames")), bool(facts.get_known("logs.parallel_layout")))
        if c is not None:
            return e, block, c
        blocks += 1
        if blocks >= MAX_BLOCKS:
            break
    return None


@check_params(area=str)
def error_family(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """X099: the first error no rule recognises, classified by its wording (msdoctor/data/error_families.toml)."""
    facts.need("logs.hits")
    found = _keyword_class(facts)
    if found is None:
        return
    e, block, c = found
    if c.area != params["area"]:
        return
    words = ", ".join(f"`{w}`" for w in c.keywords[:6])
    runner = f"; next {c.runner_up} {c.runner_up_score:g}" if c.runner_up else ""
    msg = (f"no rule recognises this error; by its wording it is a {c.area} fault ({words}; score {c.score:g}{runner}): "
           f"`{_quote(e)}` ({e.get('file')}:{e.get('line')})")  # fmt: skip
    yield Hit(message=msg, evidence=tuple(x for x in (_ev(e),) if x), rank=e.get("prank"), step=None,
              data={"fallback": {"area": c.area, "score": c.score, "keywords": list(c.keywords),
                                 "runner_up": c.runner_up, "runner_up_score": c.runner_up_score, "block": block}})  # fmt: skip


WEAK_GUESS = 0.9  # below it the guess was right less than half the time (bench/wording.py): the message says "weak"
LOW_GUESS = 0.6  # below it (down to the model's threshold, 0.4) about four times in ten: "low-confidence"


@check_params(area=str)
def wording_guess(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """X097: when neither a rule nor the keyword fallback names the first errors, a GUESS (info) at their area
    from word statistics (msdoctor/facts/wording.py over msdoctor/data/wording_model.json)."""
    facts.need("logs.hits")
    found = facts.derived("logs.fallback.guess", lambda: _guess(facts))
    if found is None:
        cut = facts.derived("logs.fallback.cut_traceback", lambda: _cut_traceback_guess(facts))
        if cut is not None and cut[1] == params["area"]:
            tb, area, said = cut
            if tb.get("dump"):
                what = "Ctrl-C's traceback" if tb["dump"] == "Ctrl-C" else f"stack dump ({tb['dump']})"
                msg = (f"a weak guess, not a diagnosis: the {what} at {tb.get('file')}:{tb.get('line')} shows a "
                       f"process waiting inside {area} code: `{said}` (where it waits, not why)")  # fmt: skip
            else:
                msg = (f"a weak guess, not a diagnosis: the traceback at {tb.get('file')}:{tb.get('line')} ends "
                       f"without its exception line, inside {area} code: `{said}` (the call it stopped in; the "
                       f"exception type and message, not pasted, say what failed)")  # fmt: skip
            at = int(tb["line"]) + 1 if tb.get("dump") and tb.get("line") is not None else tb.get("last_frame_line")
            yield Hit(message=msg, evidence=(Evidence(text=said, file=tb.get("file"), line=at),),
                      rank=None, step=None, data={"guess": {"area": area, "probability": None, "words": [said],
                                                            "runner_up": None, "from": "cut traceback"}})  # fmt: skip
        return
    if found[1].area != params["area"]:
        return
    e, g = found
    words = ", ".join(f"`{w}`" for w in g.words)
    weak = ("a low-confidence guess" if g.probability < LOW_GUESS
            else "a weak guess" if g.probability < WEAK_GUESS else "a guess")
    msg = (f"{weak}, not a diagnosis: no rule or keyword list recognises this error; its words ({words}) are "
           f"those of {g.area} errors (probability {g.probability:.2f} by word statistics"
           f"{f'; next {g.runner_up}' if g.runner_up else ''}): `{_quote(e)}` ({e.get('file')}:{e.get('line')})")  # fmt: skip
    yield Hit(message=msg, evidence=tuple(x for x in (_ev(e),) if x), rank=e.get("prank"), step=None,
              data={"guess": {"area": g.area, "probability": g.probability, "words": list(g.words),
                              "runner_up": g.runner_up}})  # fmt: skip


def _keyword_class(facts: Facts) -> tuple[dict[str, Any], list[str], Any] | None:
    """:func:`classify_first` where no specific rule recognised a root cause, once per facts (every area's X099
    reads it)."""
    return facts.derived("logs.fallback.keywords", lambda: None if _specific(facts) else classify_first(facts))


def _specific(facts: Facts) -> bool:
    """:func:`_specific_hit`, once per facts (both fallback stages ask)."""
    return facts.derived("logs.fallback.specific", lambda: _specific_hit(facts))


def _cut_traceback_guess(facts: Facts) -> tuple[dict[str, Any], str, str] | None:
    """Where the only error is a traceback cut before its exception line: the area the call it stopped in
    names (:func:`frames_hint`), with the traceback and the words that said so; None otherwise."""
    if _specific(facts) or _keyword_class(facts) is not None or unclassified_events(facts):
        return None
    tb = open_traceback(facts)
    if tb is None:
        return None
    hint = frames_hint([str(p) for p in tb.get("frames") or []], [str(c) for c in tb.get("calls") or []],
                       str(tb.get("code") or ""))  # fmt: skip
    return None if hint is None else (tb, hint[0], hint[1])


def _guess(facts: Facts) -> tuple[dict[str, Any], Any] | None:
    """The word-statistics guess at the first unrecognised errors (and the first of them), where neither a
    rule nor the keyword lists name them; None otherwise."""
    from msdoctor.facts.wording import MAX_BLOCKS as GUESS_BLOCKS
    from msdoctor.facts.wording import guess_blocks

    if _specific(facts) or _keyword_class(facts) is not None:
        return None
    evs = unclassified_events(facts)
    cands = fallback_candidates(facts)[:GUESS_BLOCKS]
    if not cands:
        return None
    g = guess_blocks((error_block(e, evs), [str(f) for f in e.get("frames") or []]) for e in cands)
    return None if g is None else (cands[0], g)


# -- a traceback cut before its exception line ------------------------------------------------------------


def open_traceback(facts: Facts) -> dict[str, Any] | None:
    """The first traceback of the logs that ends without its exception line (a paste that stops inside the
    frames, no error line after them), or None. One after an exception line of its file is not taken: vLLM
    prints the error first and its traceback after it, so the cut traceback is only that error's echo."""
    tbs = [v.get("open_traceback") for _r, v in sorted((facts.get_known("logs.ranks") or {}).items(),
                                                       key=lambda kv: int(kv[0]))]  # fmt: skip
    tbs.append((facts.get_known("logs.launcher") or {}).get("open_traceback"))
    return next((dict(tb) for tb in tbs if tb and not tb.get("after_exception")), None)


def frames_hint(frames: list[str], calls: list[str] | None = None, code: str = "") -> tuple[str, str] | None:
    """The area the innermost frames point to (a weak hint, never a verdict: a frame weighs below the
    fallback's min_score by design) and the frame that says so, or None when no frame names an area.

    ``calls`` (each frame's function, as ``frames``) and ``code`` (the source line under the innermost frame),
    where a cut traceback kept them, are read first, innermost first: the call it stopped in
    (error_families.toml [frames] calls)."""
    from msdoctor.facts.logfamily import families

    fam = families()
    if code.strip():
        area = next((a for crx, a in fam.calls if crx.search(code.strip())), None)
        if area is not None:
            return area, code.strip()
    names = list(calls or [])
    names = [""] * (len(frames) - len(names)) + names  # a frame without its function: its path still counts
    for path, name in zip(reversed(frames), reversed(names), strict=False):  # innermost first: its call, its path
        said = f"{name.split()[0]}(" if name.strip() else ""
        area = next((a for crx, a in fam.calls if said and crx.search(said)), None)
        if area is not None:
            return area, said
        for rx, area, w in fam.frames:
            if w >= 2.0 and rx.search(path):
                return area, path
    return None


def incomplete_traceback(tb: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict for a log whose only error is a traceback without its exception line: not diagnosable —
    the exception type and message are what say what failed; the frames alone never name a root cause."""
    frames = [str(p) for p in tb.get("frames") or []]
    calls = [str(c) for c in tb.get("calls") or []]
    where = f"{tb.get('file')}:{tb.get('line')}"
    hint = frames_hint(frames, calls, str(tb.get("code") or ""))
    if tb.get("dump"):  # a stack dump of a waiting process (py-spy, faulthandler) and no error line: a hang report
        inner = f"`{calls[-1] if calls else '?'}` in `{frames[-1] if frames else '?'}`"
        if tb["dump"] == "Ctrl-C":  # the traceback of a KeyboardInterrupt: where the process was when stopped
            reason = (f"a traceback ended by Ctrl-C (a bare `KeyboardInterrupt`) at {where} and no error line: the "
                      f"process was stopped by hand, not failing; its innermost frame is {inner} — where it was "
                      f"(waiting, if it seemed stuck), not why (dump every rank with py-spy while it hangs: the one "
                      f"that waits elsewhere, or is missing, is the one to read)")  # fmt: skip
        else:
            reason = (f"a stack dump ({tb['dump']}) at {where} and no error line: the process was waiting, not "
                      f"failing; its thread's innermost frame is {inner} — where it waits, not why (dump every rank: "
                      f"the one that waits elsewhere, or is missing, is the one to read)")  # fmt: skip
        if hint is not None:
            reason += f". Those frames are in {hint[0]} code (`{hint[1]}`): a hint where to look, not a cause"
        return {"rank": None, "rule": None, "verdict": "stack-dump", "reason": reason, "frames": frames,
                "evidence": [{"text": f"Stack dump ({tb['dump']}; {len(frames)} innermost frame(s) of the waiting "
                                      f"thread kept)", "file": tb.get("file"), "line": tb.get("line")}]}  # fmt: skip
    reason = (f"not diagnosable: the traceback at {where} ends without its exception line (the text stops inside "
              f"its frames, at line {tb.get('last_frame_line')}); paste the lines after the last frame — the "
              f"exception type and message say what failed")  # fmt: skip
    if hint is not None:
        reason += (f". Its innermost frames are in {hint[0]} code (`{hint[1]}`): a hint where to look, "
                   f"not a cause")  # fmt: skip
    elif frames:
        reason += f". Innermost frame: `{frames[-1]}`"
    return {"rank": None, "rule": None, "verdict": "incomplete-traceback", "reason": reason,
            "frames": frames, "evidence": [{"text": f"Traceback without exception line ({len(frames)} innermost "
                                                    f"frame(s) kept)", "file": tb.get("file"), "line": tb.get("line")}]}  # fmt: skip


# -- torchrun's failure summary ---------------------------------------------------------------------------

# What a worker's death by a signal usually means (the exit code of a killed worker is minus its number).
SIGNAL_WORDS = {
    9: "killed (often host OOM: the kernel's OOM killer sends SIGKILL)",
    11: "a segmentation fault (a crash in native code: an extension, a driver, a kernel)",
    6: "aborted (a C++ exception or an assertion in native code)",
    7: "a bus error (often /dev/shm too small for the DataLoader workers)",
    15: "terminated (SIGTERM: stopped by the launcher or the job scheduler)",
}


def first_observed_failure(facts: Facts) -> dict[str, Any] | None:
    """The entry under torchrun's `Root Cause (first observed failure):` (fact ``logs.elastic``), or None."""
    return next((e for e in facts.get_known("logs.elastic") or [] if e.get("section") == "root"), None)


def elastic_words(e: Mapping[str, Any]) -> str:
    """`rank 4 (local_rank 4) on host h: exitcode -9, Signal 9 (SIGKILL) — killed (often host OOM …)`."""
    who = f"rank {e['rank']}" if e.get("rank") is not None else "a worker"
    if e.get("local_rank") is not None:
        who += f" (local_rank {e['local_rank']})"
    if e.get("host"):
        who += f" on host {e['host']}"
    how = [f"exitcode {e['exitcode']}"] if e.get("exitcode") is not None else []
    sig = e.get("signal")
    if sig is not None:
        how.append(f"Signal {sig} ({e.get('signal_name') or '?'})" + (f" — {SIGNAL_WORDS[sig]}" if sig in SIGNAL_WORDS else ""))
    return f"{who}: {', '.join(how)}" if how else who


def with_first_failure(rc: Mapping[str, Any], e: Mapping[str, Any], kill_rule: str) -> dict[str, Any]:
    """The verdict with what torchrun's failure summary says: its rank when the verdict names none, and the
    summary's words (the headline itself when the verdict is the summary's SIGKILL row, ``kill_rule``)."""
    out = dict(rc)
    words = elastic_words(e)
    where = f"{e.get('file')}:{e.get('line')}"
    if out.get("rank") is None and e.get("rank") is not None:
        out["rank"] = e["rank"]
    if out.get("message"):
        ev = (out.get("evidence") or [{}])[0]
        # the summary's SIGKILL row, or the agent's own line for the same worker (`failed (exitcode: -9) local_rank: 3
        # (pid: 209017)`, MEM017's signature since round 63), heads: the summary's words are the headline's
        same = ev.get("line") == e.get("traceback_line") or (e.get("pid") is not None
                                                             and f"(pid: {e.get('pid')})" in str(ev.get("text", "")))
        if out.get("rule") == kill_rule and same and ev.get("file") == e.get("file"):
            out["message"] = f"torchrun's first observed failure: {words} — `{ev.get('text', '')}`"
        else:
            out["chain"] = [*out.get("chain", []), f"torchrun's failure summary names the first observed failure: "
                                                   f"{words} ({where})"]  # fmt: skip
    elif out.get("reason"):
        out["reason"] = f"{out['reason']}; torchrun's failure summary names the first observed failure: {words} ({where})"
    return out



# -- MindSpore's launch variables asked for in a HyperParallel job (rule ENV883) ---------------------------

RANK_ENV_RULE = "RT003"  # MindSpore's `Environment variables RANK_ID has not been exported` (or DEVICE_ID / No hccl mode)
HYPER_PARALLEL_RULE = "ENV884"  # a line naming HyperParallel or a frame of its `hyper_parallel` package


@check_params()
def hyper_parallel_mindspore_backend(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV883: MindSpore's rank-table variable check failed in a file that also shows HyperParallel: msrun
    exports RANK_ID for MindSpore jobs, so a HyperParallel run without it was started by a PyTorch launcher
    and HyperParallel chose its MindSpore backend (HYPER_PARALLEL_PLATFORM unset, MindSpore importable)."""
    facts.need("logs.hits")
    marks = _rule_lines(facts, HYPER_PARALLEL_RULE)
    for c in sorted(_rule_lines(facts, RANK_ENV_RULE), key=lambda x: int(x.get("line") or 0)):
        near = [m for m in marks if m.get("file") == c.get("file")]
        if not near:
            continue
        m = min(near, key=lambda x: abs(int(x.get("line") or 0) - int(c.get("line") or 0)))
        msg = (f"MindSpore's launch check failed (`{_quote(c)}`, {c.get('file')}:{c.get('line')}) in a HyperParallel "
               f"job (line {m.get('line')}): HyperParallel chose its MindSpore backend for a run started as a PyTorch "
               f"job — set HYPER_PARALLEL_PLATFORM=torch")  # fmt: skip
        evidence = tuple(x for x in ((_ev(c),) if m is c or m.get("line") == c.get("line") else (_ev(c), _ev(m))) if x)
        yield Hit(message=msg, evidence=evidence, rank=c.get("prank"), step=None,
                  data={"role": "root", "check_line": c.get("line"), "marker_line": m.get("line")})  # fmt: skip
        return


# -- a native crash right after the profiler stopped (rule ENV300) ----------------------------------------

PROFILER_STOP_RULE = "ENV301"  # torch_npu's `Incorrect schedule: Stop profiler while current state is RECORD`
NATIVE_CRASH_RULE = "ENV302"  # the process's SIGSEGV banner `!!!!!!! Segfault encountered !!!!!!!`


def _rule_lines(facts: Facts, rule: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for h in facts.get_known("logs.hits") or []:
        if h.get("rule") == rule:
            out.extend(f for f in (h.get("firsts") or [h.get("first") or {}]) if f)
    return out


@check_params(within_lines=int)
def profiler_stop_crash(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV300: the process crashed (SIGSEGV banner) within a few lines after torch_npu's profiler stopped while
    recording, in the same file: the stop itself crashed it (the torch_npu 2.10.0.post4 profiler regression)."""
    facts.need("logs.hits")
    stops, crashes = _rule_lines(facts, PROFILER_STOP_RULE), _rule_lines(facts, NATIVE_CRASH_RULE)
    for c in sorted(crashes, key=lambda x: int(x.get("line") or 0)):
        before = [s for s in stops if s.get("file") == c.get("file")
                  and 0 <= int(c.get("line") or 0) - int(s.get("line") or 0) <= params["within_lines"]]  # fmt: skip
        if not before:
            continue
        s = before[-1]
        msg = (f"the process crashed (`{_quote(c)}`, {c.get('file')}:{c.get('line')}) "
               f"{int(c.get('line') or 0) - int(s.get('line') or 0)} line(s) after torch_npu's profiler stopped "
               f"while recording (`{_quote(s)}`, line {s.get('line')}): stopping the profiler crashed it")  # fmt: skip
        yield Hit(message=msg, evidence=tuple(x for x in (_ev(s), _ev(c)) if x), rank=c.get("prank"), step=None,
                  data={"role": "root", "stop_line": s.get("line"), "crash_line": c.get("line")})  # fmt: skip
        # role root: the crash's frames may also match a signature rule of the same fault (ENV323's
        # `_PyInterpreterState_GET`); the stop-then-crash pair, earlier in the file, heads the verdict
        return


# -- TBE's "main process disappeared" after the driver reported the run's result (rule ENV979) -------------

RUN_FINISHED_RULE = "ENV978"  # verl's `Final validation metrics: {…}`, a Ray Train `Result(… checkpoint=Checkpoint(…))`
TBE_ORPHAN_RULE = "MEM016"  # CANN's TBE compile daemon: `TBE Subprocess[task_distribute] raise error[], main process disappeared!`


@check_params(within_lines=int)
def finished_then_tbe_orphan(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV979: CANN's TBE compile daemons report their main process gone within a few lines AFTER the training
    driver printed the run's final result, in the same file: the job had completed and its worker processes were
    torn down under the daemons (an unclean exit, ENV311's reading), not killed from outside (MEM016)."""
    facts.need("logs.hits")
    marks, orphans = _rule_lines(facts, RUN_FINISHED_RULE), _rule_lines(facts, TBE_ORPHAN_RULE)
    for o in sorted(orphans, key=lambda x: int(x.get("line") or 0)):
        before = [m for m in marks if m.get("file") == o.get("file")
                  and 0 < int(o.get("line") or 0) - int(m.get("line") or 0) <= params["within_lines"]]  # fmt: skip
        if not before:
            continue
        m = before[-1]
        msg = (f"CANN's TBE compile daemons report their main process gone (`{_quote(o)}`, {o.get('file')}:"
               f"{o.get('line')}) {int(o.get('line') or 0) - int(m.get('line') or 0)} line(s) after the driver "
               f"printed the run's final result (`{_quote(m)}`, line {m.get('line')}): the job had finished and its "
               f"workers were torn down under the daemons at exit — shut Ray / the engine down explicitly at the "
               f"end of the driver; nothing was killed")  # fmt: skip
        yield Hit(message=msg, evidence=tuple(x for x in (_ev(m), _ev(o)) if x), rank=o.get("prank"), step=None,
                  data={"role": "root", "finished_line": m.get("line"), "orphan_line": o.get("line")})  # fmt: skip
        return


# -- an error raised by the framework's own install check (rule ENV336) ------------------------------------

INSTALL_CHECK_RULE = "ENV334"  # `paddle.utils.run_check()`, `Running verify PaddlePaddle program ...`, `mindspore.run_check()`
INSTALL_PASSED_RULE = "ENV335"  # `PaddlePaddle is installed successfully!`, `MindSpore has been installed on platform […] successfully!`
# an error of these areas keeps its own rule inside the check: ENV's says more than "the install", MEM's (the card
# full of another process's memory) is the machine's state, not the install
INSTALL_CHECK_KEEPS = ("ENV", "MEM")


def _errors(facts: Facts) -> list[dict[str, Any]]:
    """Every error line read: the signature rules' error lines (with their rule) and the lines no rule knows."""
    out = [dict(f, rule=h.get("rule")) for h in facts.get_known("logs.hits") or []
           for f in (h.get("firsts") or [h.get("first") or {}])
           if f and (f.get("severity") == "error" or f.get("logged_as"))]  # an error rule's line logged at W level
    return out + [e for e in unclassified_events(facts) if not e.get("echo")]


@check_params(within_lines=int)
def install_check_failed(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV336: the first error line after the framework's install check started (ENV334), in the same file, within
    `within_lines` lines and before the check said it passed (ENV335): the framework's own verification program
    failed, so the install (wheel, CUDA / CANN stack, driver, device support) is at fault whatever the message
    says. Where an ENV or MEM rule reads any error line of the check, that rule keeps the verdict (it says more, or it
    is the machine's state)."""
    facts.need("logs.hits")
    starts, passed = _rule_lines(facts, INSTALL_CHECK_RULE), _rule_lines(facts, INSTALL_PASSED_RULE)
    errors = sorted(_errors(facts), key=lambda x: (str(x.get("file")), int(x.get("line") or 0)))
    for s in sorted(starts, key=lambda x: int(x.get("line") or 0)):
        line, file = int(s.get("line") or 0), s.get("file")
        stop = min([int(p.get("line") or 0) for p in passed if p.get("file") == file and int(p.get("line") or 0) >= line]
                   + [line + params["within_lines"] + 1])  # the check's pass line, else the window's end
        inside = [x for x in errors if x.get("file") == file and line <= int(x.get("line") or 0) < stop]
        if any(str(x.get("rule") or "").startswith(INSTALL_CHECK_KEEPS) for x in inside):
            return  # an ENV or MEM rule reads a line of the failed check (a CANN block's cause under its code line)
        e = inside[0] if inside else None
        if e is None and (s.get("groups") or {}).get("failed"):
            e = s  # the user's own words that the check failed (`run_check时都报错：CUBLAS error(7)`) are the error
        if e is None:
            continue
        rule = str(e.get("rule") or "")
        where = f"{e.get('file')}:{e.get('line')}"
        if e is s:
            said = f"the user reports it failing (`{_quote(e)}`, {where})"
        else:
            read = f"{rule}'s reading" if rule else "no rule knows it"
            said = f"`{_quote(e)}` ({where}; {read}) was raised by it (started at line {line}: `{_quote(s)}`)"
        msg = (f"the framework's own install check failed: {said} — its verification program is the framework's, "
               f"so the install is at fault (the wheel against the CUDA / CANN stack, the driver, the device's "
               f"support), not a model")  # fmt: skip
        evidence = tuple(x for x in ((_ev(e),) if e.get("line") == s.get("line") else (_ev(s), _ev(e))) if x)
        yield Hit(message=msg, evidence=evidence, rank=e.get("prank"), step=None,
                  data={"role": "root", "first_time": e.get("time") or s.get("time"), "check_line": line,
                        "error_line": e.get("line"), "error_rule": rule or None})  # fmt: skip
        return


def _mark_before(marks: list[dict[str, Any]], e: Mapping[str, Any], within_lines: int) -> dict[str, Any] | None:
    """The nearest of a marker rule's lines (a traceback frame) recorded before the error line `e`, in the same file,
    at most `within_lines` lines above it."""
    line, file = int(e.get("line") or 0), e.get("file")
    near = [m for m in marks if m.get("file") == file and 0 < line - int(m.get("line") or 0) <= within_lines]
    return max(near, key=lambda x: int(x.get("line") or 0), default=None)


# -- a shape refusal inside a checkpoint converter (rule CKPT083) --------------------------------------------


@check_params(within_lines=int)
def converter_shape_refused(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """CKPT083: a shape refusal (PAR010 / PAR001 or their twins) after a converter's frame (CKPT081), in the same
    file, within `within_lines` lines: the converter's reshape does not fit the checkpoint it read, not the model's
    code nor a training job's split."""
    facts.need("logs.hits")
    marks = _rule_lines(facts, CONVERTER_RULE)
    if not marks:
        return
    refusals = sorted((e for e in _errors(facts) if str(e.get("rule") or "") in CONVERTER_SHAPE_RULES),
                      key=lambda x: (str(x.get("file")), int(x.get("line") or 0)))  # fmt: skip
    for e in refusals:
        line, file = int(e.get("line") or 0), e.get("file")
        m = _mark_before(marks, e, params["within_lines"])  # the nearest converter frame recorded before it
        if m is None:
            continue
        where = f"{file}:{line}"
        script = re.search(r'File "(?:[^"]*[/\\])?([^"/\\]+)", line (\d+)', str(m.get("text") or ""))
        frame = f"{script.group(1)}, line {script.group(2)}" if script else _quote(m)
        on = f"under the converter's frame `{frame}` ({file}:{m.get('line')})"
        msg = (f"a checkpoint converter refused a reshape: `{_quote(e)}` ({where}; {e.get('rule')}'s reading) was "
               f"raised {on} — the converter's split does not fit this checkpoint or this target layout, not the "
               f"model's code nor a training job's sharding")  # fmt: skip
        evidence = tuple(x for x in (_ev(m), _ev(e)) if x)
        yield Hit(message=msg, evidence=evidence, rank=e.get("prank"), step=None,
                  data={"role": "root", "first_time": e.get("time") or m.get("time"), "converter_line": m.get("line"),
                        "error_line": e.get("line"), "error_rule": e.get("rule"),
                        "groups": e.get("groups") or {}})  # fmt: skip
        return


# -- a process group's pickle refusal under copy.deepcopy (rule PAR090) -------------------------------------------


@check_params(within_lines=int)
def deepcopy_pickle_refused(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """PAR090: CKPT092's refusal to pickle a live process group after a `copy.py … deepcopy` frame (PAR089, the same
    file, within `within_lines` lines) in a file without torch's `serialization.py … save` frames: the
    traceback is a deep copy of the wrapped model (an EMA or a teacher made with `copy.deepcopy(model)` after DDP /
    FSDP wrapped it), not a checkpoint being written."""
    facts.need("logs.hits")
    marks = _rule_lines(facts, DEEPCOPY_MARK_RULE)
    if not marks:
        return
    for e in sorted((e for e in _errors(facts) if e.get("rule") == PICKLE_REFUSAL_RULE),
                    key=lambda x: (str(x.get("file")), int(x.get("line") or 0))):  # fmt: skip
        line, file = int(e.get("line") or 0), e.get("file")
        m = _mark_before(marks, e, params["within_lines"])
        g = (m or {}).get("groups") or {}  # the file's first mark, with the kinds of frame its later marks gave
        if m is None or not g.get("copy") or g.get("save"):
            continue  # no deepcopy frame, or torch.save's own frames in the same file: CKPT092's reading stands
        msg = (f"a deep copy of a model that holds a live process group: `{_quote(e)}` ({file}:{line}) was raised "
               f"under `copy.deepcopy` ({file}:{m.get('line')}: `{_quote(m)}`) — the object copied is the DDP / FSDP "
               f"/ DeepSpeed-wrapped model (or one that keeps a process group), typically for an EMA or a teacher; "
               f"copy the unwrapped module (`model.module`) or make the copy before wrapping")  # fmt: skip
        evidence = tuple(x for x in (_ev(m), _ev(e)) if x)
        yield Hit(message=msg, evidence=evidence, rank=e.get("prank"), step=None,
                  data={"role": "root", "first_time": e.get("time") or m.get("time"), "frame_line": m.get("line"),
                        "error_line": e.get("line"), "error_rule": e.get("rule")})  # fmt: skip
        return


@check_params(min_ratio=float, min_rise=float, window=int)
def loss_diverged(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """NUM204: a finite loss of a progress line far above the losses logged before it: a divergence that no line
    calls an error. Each file's curve on its own (a rank's files, or a paste's with no rank); the first jump only."""
    ranks: dict[str, Rank] = facts.need("logs.ranks")
    ratio, rise, w = float(params["min_ratio"]), float(params["min_rise"]), int(params["window"])
    curves: list[tuple[int | None, dict[str, Any]]] = [(int(r), c) for r in sorted(ranks, key=int)
                                                       for c in ranks[r].get("losses") or []]  # fmt: skip
    curves += [(None, c) for c in (facts.get_known("logs.launcher") or {}).get("losses") or []]
    for rank, curve in curves:
        hist: list[float] = []
        for step, x, line in curve.get("points") or []:
            if not isinstance(x, (int, float)) or not math.isfinite(x):
                continue  # a NaN / inf loss is the line rules' (they read it where it is printed)
            m = statistics.median(hist[-w:]) if hist else 0.0
            if m > 0 and x >= ratio * m and x - m >= rise:
                at = f"step {step}" if step is not None else f"line {line}"
                on = f" on rank {rank}" if rank is not None else ""
                yield Hit(
                    message=f"the loss rose from {m:.4g} to {x:.4g} ({x / m:.3g}×) at {at}{on}: the training diverged "
                            f"without a NaN (a finite loss, which no error line reports)",
                    evidence=(Evidence(text=f"{curve['file']}:{line}: loss {x:.6g} after a median of {m:.6g} over the "
                                            f"{len(hist[-w:])} loss(es) logged before it",
                                       fact="logs.ranks" if rank is not None else "logs.launcher"),),
                    rank=rank,
                    step=step,
                    data={"loss": x, "median": m, "file": curve["file"], "line": line},
                )
                return
            hist.append(float(x))
