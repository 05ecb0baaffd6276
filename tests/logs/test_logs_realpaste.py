"""`msdoctor logs` on what users really paste: CANN code families as data, launcher prefixes, one process,
several jobs, input that is no log. Log lines are copied exactly from the public threads named beside them."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.codes import lookup
from msdoctor.engine.evaluate import signature_set
from msdoctor.facts.logformats import split_embedded, strip_prefixes
from tests.conftest import run_cli
from tests.logs.conftest import SAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from paste import hard_wrap  # noqa: E402  (bench/paste.py's hard-wrap form: one definition)

SIGS = signature_set(load_catalogue())

# vllm-project/vllm-ascend#3413 (EI0002 from one process; torch_npu prefix with RankID)
EI0002_ONE_PROCESS = (
    "[ERROR] 2025-10-11-15:09:34 (PID:2969, Device:0, RankID:101) ERR00100 PTA call acl api failed.\n"
    "EI0002: [PID: 2969] 2025-10-11-15:09:34.713.335 The wait execution of the Notify register times out. Reason: "
    "The Notify register has not received the Notify record from remote rank: [24]. base information: "
    "[streamID:[109], taskID[38], taskType[Notify Wait], tag[AllReduce_group_name_1654NHRAllReduceC\n"
)
# vllm-project/vllm-ascend#2800 (two codes on one line: the internal EH9999 wraps 507048)
TWO_CODES = ("(VllmWorker TP1 pid=961) ERROR 09-07 01:11:09 [multiproc_executor.py:596] EH9999: [PID: 961] "
             "2025-09-07-01:11:09.333.567 synchronize stream failed, runtime result = 507048[FUNC:ReportCallError]"
             "[FILE:log_inner.cpp][LINE:161]")  # fmt: skip


def fired(line: str) -> dict[str, dict[str, str]]:
    return {m.rule.id: m.groups for m in SIGS.match(line)}


def test_code_lookup_exact_family_and_unknown():
    ei = lookup("EI0006")
    assert ei and ei.known and ei.rule == "COMM080" and "socket" in ei.meaning and ei.role == "consequence"
    other = lookup("EI0077")  # not listed: the family's meaning
    assert other and not other.known and other.meaning == ei.family_meaning and other.component == "HCCL"
    assert lookup("207018").rule == "MEM040" and lookup("507046").rule == "COMM080"  # type: ignore[union-attr]
    assert lookup("507999").rule == "NUM030" and not lookup("507999").known  # type: ignore[union-attr]
    assert lookup("EH9999").internal and not lookup("EE1002").internal  # type: ignore[union-attr]
    # EE8888 is the runtime's `Inner Error!` wrapper of a failed API call, not a device task: a catch-all
    assert lookup("EE8888").internal and lookup("EE8888").specificity == 2  # type: ignore[union-attr]
    assert lookup("507899").rule == "ENV050"  # driver internal error: a set-up fault, not an operator's  # type: ignore[union-attr]
    assert lookup("EX1234") is None and lookup("999999") is None and lookup("E1234") is None


def test_aclnn_parameter_codes_name_the_area_of_the_ez1001_printed_with_them():
    # vllm-project/vllm-ascend#11720: the aclnn return code and the EZ code of the same rejected call. ACLNN_ERR_PARAM_*
    # (161xxx) is the operator's input check that CANN prints as EZ1001; both must name one area, not ENV and NUM.
    code = ("(Worker_TP0 pid=422) ERROR 07-07 06:13:02 [multiproc_executor.py:962] RuntimeError: npu_fusion_attention:"
            "../third_party/op-plugin/op_plugin/ops/opapi/FlashAttentionKernelNpuOpApi.cpp:1345 NPU function error: "
            "call aclnnFlashAttentionVarLenScore failed, error code is 161001")  # fmt: skip
    ez = ("(EngineCore pid=396) ERROR 07-07 06:13:02 [core.py:1167] [PID: 422] 2026-07-07-06:13:02.099.798 "
          "AclNN_Parameter_Error(EZ1001): FlashAttentionScore launch kernel failed.")  # fmt: skip
    assert lookup("161002").rule == lookup("EZ1001").rule == "NUM030"  # type: ignore[union-attr]
    assert set(fired(code)) & {"NUM030", "ENV050"} == {"NUM030"} and "NUM030" in fired(ez)


def test_atc_e19010_is_a_listed_unsupported_operator_code():
    # open-mmlab/mmagic#1068: ATC has no ONNX parser for mmcv's grid_sampler (CANN GE error reference E19010)
    line = "E19010: No parser is registered for Op [grid_sampler_3140, optype [ai.onnx::11::grid_sampler]]."
    info = lookup("E19010")
    assert info and info.known and info.rule == "ENV050" and "parser" in info.meaning
    assert fired(line)["ENV050"]["family_code"] == "E19010"


def test_code_family_routed_by_data_and_specific_rule_keeps_precedence():
    # CANN troubleshooting guide, OOM Error Due to Memory Allocation Failure (plog)
    el = ("[ERROR] RUNTIME(2936187,python3):2022-04-21-14:19:39.429.491 [npu_driver.cc:780]2969960 "
          "DevMemAllocHugePageManaged:report error module_type=1, module_name=EL9999")  # fmt: skip
    assert fired(el)["MEM040"]["family_code"] == "EL9999"
    # a public sample string: ("ACL stream sync timeout, error code is 507046", "流同步超时")
    assert "COMM080" in fired('        ("ACL stream sync timeout, error code is 507046", "流同步超时"),')
    ei2 = EI0002_ONE_PROCESS.splitlines()[1]
    hits = fired(ei2)
    assert "COMM021" in hits and not {"COMM080", "NUM030"} & set(hits)  # COMM021 knows EI0002
    hits = fired(strip_prefixes(TWO_CODES)[0])
    assert hits["NUM030"]["family_code"] == "507048" and hits["NUM030"]["other_codes"] == "EH9999"


@pytest.mark.parametrize(("raw", "text", "rank"), [
    ("[rank1]:[E606] operator():.../op_api_common.h:192 NPU function error: call failed, error code is 507015",
     "operator():.../op_api_common.h:192 NPU function error: call failed, error code is 507015", 1),
    ("(EngineCore_DP0 pid=3132) ERROR 10-15 16:32:16 [core.py:708] RuntimeError: npuSynchronizeDevice:build/CMakeFiles/"
     "torch_npu.dir/compiler_depend.ts:508 NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507013",
     "RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:508 NPU function error: "
     "AclrtSynchronizeDeviceWithTimeout, error code is 507013", None),
    ("[rank0]:[W530 17:44:21.455843271 compiler_depend.ts:526] Warning: NPU warning, error code is 507035[Error]:",
     "Warning: NPU warning, error code is 507035[Error]:", 0),
    # constructed: mpirun's prefix and ANSI colour around CANN's real `EE9999: Inner Error!`
    ("\x1b[31m[1,3]<stderr>:EE9999: Inner Error!\x1b[0m", "EE9999: Inner Error!", 3),  # Open MPI: [job,rank]
    # vllm-project/vllm-ascend#2800: a two-word Ray/vLLM actor name before pid=
    ("(VllmWorker TP1 pid=961) ERROR 09-07 01:11:09 [multiproc_executor.py:596] EH9999: Inner Error!",
     "EH9999: Inner Error!", None),
    # hiyouga/LlamaFactory#7986: a paste copied with its line numbers (`cat -n`: a number and a tab)
    ("  1145\t[rank3]: RuntimeError: InnerRun:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:234 OPS function error: "
     "Conv3D, error code is 500002",
     "RuntimeError: InnerRun:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:234 OPS function error: Conv3D, error "
     "code is 500002", 3),
    ("    12\t  File \"train.py\", line 3, in <module>", 'File "train.py", line 3, in <module>', None),
])  # fmt: skip
def test_prefixes_of_launchers_and_pastes_are_stripped(raw, text, rank):
    assert strip_prefixes(raw) == (text, rank)


def test_message_in_a_json_string_is_split_into_its_lines(tmp_path):
    lines = EI0002_ONE_PROCESS.splitlines()
    (tmp_path / "server.log").write_text(json.dumps({"level": "error", "message": "\n".join(lines)}) + "\n")
    assert len(split_embedded(json.dumps("\n".join(lines)))) == 2
    d = run_cli("logs", "--json", str(tmp_path / "server.log")).json()
    assert d["root_cause"]["rule"] == "COMM021"


def test_one_process_gets_a_root_cause_with_the_named_peer_not_comm504(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text(EI0002_ONE_PROCESS)
    r = run_cli("logs", "--json", str(log))
    d = r.json()
    assert r.rc == 1
    rc = d["root_cause"]
    assert rc["rule"] == "COMM021" and "24" in rc["message"] and rc["named_culprit"]
    assert any("peer 24" in c and "consequence" in c for c in rc["chain"])
    assert "COMM504" not in {f["rule"] for f in d["findings"]}
    text = run_cli("logs", str(log)).out
    assert "Root cause: rank 101 (COMM021)" in text and "not determined" not in text  # RankID:101 of torch_npu


def test_finding_carries_parsed_values_and_code_fix(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text(TWO_CODES + "\n")
    f = next(x for x in run_cli("logs", "--json", str(log)).json()["findings"] if x["rule"] == "NUM030")
    assert f["message"].startswith("507048 (Runtime): ACL_ERROR_RT_FFTS_PLUS_TIMEOUT")
    assert "synchronize stream failed, runtime result = 507048" in f["message"] and "line(s)" in f["message"]
    assert "plog names the kernel" in f["fix"] and f["data"]["cann"]["code"] == "507048"


def test_several_jobs_in_one_folder_are_not_merged(tmp_path):
    for job in ("run1", "run2", "run3"):
        shutil.copytree(SAMPLES / "hang" / "logs", tmp_path / job)
    r = run_cli("logs", str(tmp_path))
    assert r.rc == 2 and "3 separate jobs" in r.err and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err
    assert run_cli("logs", str(tmp_path / "run2")).rc == 1  # one job at a time works


def test_input_without_a_known_log_grammar_is_exit_2_not_clean(tmp_path):
    (tmp_path / "notes.txt").write_text("Meeting notes\nWe will train the model next week.\n")
    (tmp_path / "syslog.log").write_text("Dec  1 02:00:01 host CRON[123]: (root) CMD (run-parts /etc/cron.hourly)\n")
    r = run_cli("logs", str(tmp_path))
    assert r.rc == 2 and "known log grammar" in r.err and "✓" not in r.out


def test_a_text_file_beside_the_logs_is_not_a_rank(tmp_path):
    shutil.copytree(SAMPLES / "hang" / "logs", tmp_path / "logs")
    (tmp_path / "logs" / "rank_7.txt").write_text("Notes about this run: rank 7 was slow yesterday.\n")
    d = run_cli("logs", "--json", str(tmp_path / "logs")).json()
    assert d["coverage"]["ranks"] == [0, 1] and d["coverage"]["missing_ranks"] == []
    assert any("not a log" in s["reason"] for s in d["skipped"])


def test_only_the_hung_ranks_log_is_not_a_clean_bill_of_health():
    r = run_cli("logs", str(SAMPLES / "hang" / "logs" / "worker_1.log"))
    assert "✓ no findings" not in r.out
    assert "No error found" in r.out and "Not judged" in r.out and "1 file(s) read" in r.out


def test_coverage_in_json(tmp_path):
    d = run_cli("logs", "--json", str(SAMPLES / "hang" / "logs")).json()
    cov = d["coverage"]
    assert cov["files_read"] == 4 and cov["ranks"] == [0, 1] and cov["lines"] > 100 and cov["jobs"] == 1


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_a_message_wrapped_over_two_lines_is_read_whole(tmp_path, spec, engine):
    from msdoctor.facts.logscan import ScanSpec, scan_file

    lines = EI0002_ONE_PROCESS.splitlines()
    head, _, tail = lines[1].partition(" times out. ")  # the browser broke the EI0002 line after "register"
    f = tmp_path / "paste.log"
    f.write_text(lines[0] + "\n" + head + "\ntimes out. " + tail + "\n")
    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    hit = scan_file(str(f), s)["hits"]["COMM021"]["first"]
    assert hit["groups"] == {"peer": "24"} and hit["line"] == 2


# PaddlePaddle/PaddleCustomDevice#2452: the user wrapped the message by hand, each line cut after a separator
PADDLE_WRAPPED = (
    "`ValueError: (InvalidArgument) Fail to open library: \n"
    "/usr/local/lib/python3.10/dist-packages/paddle_custom_device/libpaddle-custom-npu.so \n"
    "with error: /usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1/lib/libtbe_adapter.so: \n"
    "undefined symbol: _ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb`\n"
)


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_a_message_cut_after_a_separator_is_joined_with_its_rest(tmp_path, spec, engine):
    # a line that ends in `: ` continues on the next one: joined when that gives a specific rule; the symbol
    # stops before the closing backtick of the paste
    from msdoctor.facts.logscan import ScanSpec, scan_file

    f = tmp_path / "paste.log"
    f.write_text(PADDLE_WRAPPED)
    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    hit = scan_file(str(f), s)["hits"]["ENV024"]["first"]
    assert hit["line"] == 3 and hit["groups"] == {
        "library": "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1/lib/libtbe_adapter.so",
        "symbol": "_ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb",
    }
    # a line cut after its separator whose next line gives no rule more stays as it was
    f.write_text("RuntimeError: something failed: \nsee the log above\n")
    assert "ENV024" not in scan_file(str(f), s)["hits"]


@pytest.mark.parametrize("engine", ["python", "grep"])
@pytest.mark.parametrize("space", ["\u00a0", "\u3000"])
def test_text_copied_from_a_web_page_is_read_as_the_log_had_it(tmp_path, spec, engine, space):
    # a paste out of a rendered page: no-break (or ideographic) spaces where the log had spaces, a zero-width
    # space inside a word; the line numbers stay the file's
    from msdoctor.facts.logscan import ScanSpec, scan_file

    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    hits = []
    for text in (EI0002_ONE_PROCESS, EI0002_ONE_PROCESS.replace(" ", space).replace("Notify", "No\u200btify")):
        f = tmp_path / "paste.log"
        f.write_text("copied from the issue page\n" + text, encoding="utf-8")
        hits.append(scan_file(str(f), s)["hits"]["COMM021"]["first"])
    assert hits[1]["groups"] == {"peer": "24"} and hits[1]["line"] == hits[0]["line"]


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_html_character_references_of_a_page_source_are_read_as_the_log_had_them(tmp_path, spec, engine):
    # a log copied out of a page's HTML source: quotes as `&#39;`/`&quot;`, `<` as `&lt;`; a reference to a line
    # break becomes a space, so the line numbers stay the file's
    from msdoctor.facts.logscan import ScanSpec, scan_file
    from msdoctor.facts.logstate import from_web_copy

    assert from_web_copy(b"&lt;module&gt; &quot;x&quot; &#x27;y&#39; &amp;lt; a&#10;b &#99999999;") == \
        b"<module> \"x\" 'y' &lt; a b &#99999999;"
    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    f = tmp_path / "paste.log"
    f.write_text("Traceback (most recent call last):&#10;\n  File &quot;train.py&quot;, line 3, in &lt;module&gt;\n"
                 "ModuleNotFoundError: No module named &#39;te&#39;\n", encoding="utf-8")
    hit = scan_file(str(f), s)["hits"]["ENV004"]["first"]
    assert hit["groups"] == {"module": "te"} and hit["line"] == 3
    # a blog's typographic quotes (mindspore-lab/mindone#293's line as a CSDN post would print it)
    f.write_text("ModuleNotFoundError: No module named \u2018te\u2019\n", encoding="utf-8")
    assert scan_file(str(f), s)["hits"]["ENV004"]["first"]["groups"] == {"module": "te"}


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_a_full_width_colon_after_an_exception_class_is_read_as_pythons(tmp_path, spec, engine):
    # LLaMA-Factory's NPU FAQ quotes `AssertionError： Torch not compiled with CUDA enabled` (a Chinese document's colon)
    from msdoctor.facts.logscan import ScanSpec, scan_file

    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    f = tmp_path / "faq.txt"
    f.write_text("AssertionError\uff1a Torch not compiled with CUDA enabled\n", encoding="utf-8")
    out = scan_file(str(f), s)
    assert "ENV061" in out["hits"], out["hits"]
    d = run_cli("logs", "--json", str(f)).json()
    assert (d.get("root_cause") or {}).get("rule") == "ENV061"


def test_every_rules_real_lines_still_fire_after_the_web_copy_normalisation():
    # the scanner reads a web copy's typography as ASCII (quotes, colons, spaces); a rule that was written for the
    # typographic form of its real line must still read it after that
    from msdoctor.facts.logstate import from_web_copy, has_web_copy
    from tests.logs.test_logs_scan import _ruleid_lines

    typographic = [(rid, line) for rid, line in _ruleid_lines() if has_web_copy(line.encode("utf-8"))]
    assert typographic  # the fixtures hold real lines copied with typographic quotes and full-width colons
    for rid, line in typographic:
        assert rid in fired(from_web_copy(line.encode("utf-8")).decode("utf-8")), (rid, line)


CORPUS = Path(__file__).resolve().parent.parent / "realworld" / "logs"


@pytest.mark.parametrize("engine", ["python", "grep"])
@pytest.mark.parametrize("width", [100, 120])  # both cut `halMemAlloc failed: device_id=7, size=…` in two
def test_a_paste_hard_wrapped_at_a_terminal_width_is_read_whole(tmp_path, spec, engine, width):
    # cann-doc-tfmigr-89: the plog lines of a device OOM, `halMemAlloc failed: device_id=7, size=…` among them;
    # cut at a terminal's width the phrase falls across two lines, and no single line holds it
    from msdoctor.facts.logscan import ScanSpec, scan_file

    text = (CORPUS / "cann-doc-tfmigr-89-devmm-heap-alloc-managed-out-of-memory-2021" / "log.txt").read_text(encoding="utf-8")
    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    f = tmp_path / "paste.log"
    f.write_text(hard_wrap(text, width), encoding="utf-8")
    out = scan_file(str(f), s)
    hit = out["hits"]["MEM014"]["first"]
    assert out["wrap_width"] == width and hit["groups"]["device"] == "7"
    wrapped = f.read_text(encoding="utf-8").splitlines()
    assert not any("halMemAlloc failed" in line for line in wrapped)  # no single line holds the phrase
    assert hit["line"] == 1 and out["lines"] == len(wrapped)  # the paste's one line, re-joined; numbering kept


def test_records_of_one_length_are_not_taken_for_a_hard_wrap():
    # fms-274: torchrun's `W0527 09:20:36.762000 … Sending process 96485 closing signal SIGTERM` lines all have
    # the same length; they are records, not one line cut at a width
    from msdoctor.facts.logstate import wrap_width

    head = (CORPUS / "fms-274-number-of-heads-not-divisible-by-world-size-tp-2024" / "log.txt").read_bytes()
    assert wrap_width(head) is None


def test_a_rich_consoles_word_wrapped_lines_are_joined_with_a_space():
    # starcoder-77 (round 76 c): rich's traceback box sets the width (71); its text lines wrap at a word and drop the
    # space there, so `train_batch_size is not` | `equal to …` is one sentence, not the glued `notequal`
    from msdoctor.facts.logstate import dewrap, wrap_width

    head = (CORPUS / "starcoder-77-chat-lora-deepspeed-rich-traceback-train-batch-64-not-4x8x1-2023" / "paste.log").read_bytes()
    width = wrap_width(head)
    assert width == 71
    text = dewrap(head, width).decode("utf-8")
    assert "train_batch_size is not equal to micro_batch_per_gpu" in text
    assert "world_size 64 != 4 * 8 * 1" in text
    assert len(text.split("\n")) == len(head.decode("utf-8").split("\n"))  # the line numbers stay the file's
    # a terminal's cut inside a word is still glued
    plain = ("x" * 59 + "halMemAl\nloc failed\n") * 3 + "end\n"
    assert "halMemAlloc failed" in dewrap(plain.encode(), 67).decode()


@pytest.mark.parametrize(("case", "rule"), [
    # jax-19971: one long UserWarning line, cut twice at 100 columns (`TPU backe` | `nd initialization …`)
    ("jax-19971-tpu-v4-32-jax-test-stuck-tpu-backend-initialization-taking-more-than-60-seconds-all-tpu-hosts-2024",
     "COMM762"),
    # vllm-20216: the issue title alone, cut before a space (`Quantization scheme is` | ` not supported`)
    ("vllm-20216-qwen3-32b-awq-compressed-tensors-tp2-quantization-scheme-not-supported-title-2025", None),
])
def test_a_paste_with_one_long_line_cut_at_a_terminal_width_is_read_whole(tmp_path, case, rule):
    # one or two cut lines give no width to read (the longest line is alone in most texts): the weak reading
    # re-joins the longest line with the line that continues it, and is kept because a rule then reads it
    from msdoctor.facts.logstate import wrap_width, wrap_width_weak

    src = CORPUS / case
    for f in src.iterdir():
        if f.name != "SOURCE.md":
            (tmp_path / f.name).write_text(hard_wrap(f.read_text(encoding="utf-8"), 100), encoding="utf-8")
    head = b"".join(f.read_bytes() for f in tmp_path.iterdir())
    assert wrap_width(head) is None and wrap_width_weak(head) == 100
    d = run_cli("logs", "--json", str(tmp_path)).json()
    whole = run_cli("logs", "--json", str(src)).json()
    got = (d.get("root_cause") or {}).get("rule")
    assert got is not None and got == (whole.get("root_cause") or {}).get("rule")
    assert rule is None or got == rule


def test_a_live_jobs_quiet_log_is_not_read_again_for_a_hard_wrap(tmp_path):
    # the watchdog polls a live job's logs (collect(reread_quiet=False)): a quiet poll is read once, not again with
    # its longest line re-joined — the same text a finished job's reading re-joins (the test above)
    from msdoctor.facts.logs import collect

    case = "jax-19971-tpu-v4-32-jax-test-stuck-tpu-backend-initialization-taking-more-than-60-seconds-all-tpu-hosts-2024"
    text = (CORPUS / case / "paste.log").read_text(encoding="utf-8")
    f = tmp_path / "worker_0.log"
    f.write_text("2024-01-01 10:00:00,000 - mindformers - INFO - step 1 loss 2.5\n" + hard_wrap(text, 100), encoding="utf-8")
    _, once = collect([str(f)], reread_quiet=False)
    _, again = collect([str(f)])
    assert not any(s.get("hits") for s in once.files) and once.files[0].get("wrap_weak")
    assert "COMM762" in again.files[0]["hits"]


def test_a_line_of_the_width_by_chance_is_not_joined_to_the_exception_after_it(tmp_path):
    # kohya-ss-93, cut at 100 columns: the frame's source line `raise ValueError(err.format(… device."))` is 100
    # characters long as written, and the exception line after it starts a record: the other cut lines are
    # re-joined, that one is not (joined, `ValueError: bf16 mixed precision requires …` would not start its line)
    from msdoctor.facts.logstate import _continues, wrap_width

    text = (CORPUS / "kohya-ss-93-train-network-prepare-accelerator-bf16-mixed-precision-requires-pytorch-110-2023"
            / "paste.log").read_text(encoding="utf-8")
    wrapped = hard_wrap(text, 100)
    lines = wrapped.splitlines()
    natural = next(i for i, ln in enumerate(lines) if ln.endswith('supported device."))'))
    assert len(lines[natural]) == 100 and not _continues(lines[natural], lines[natural + 1])
    assert wrap_width(wrapped.encode("utf-8")) == 100
    f = tmp_path / "paste.log"
    f.write_text(wrapped, encoding="utf-8")
    d = run_cli("logs", "--json", str(tmp_path)).json()
    assert ((d.get("root_cause") or {}).get("rule") or "").startswith("ENV")


def test_the_longest_line_before_a_record_or_an_indent_is_not_a_cut():
    from msdoctor.facts.logstate import wrap_width_weak

    line = "x" * 80
    assert wrap_width_weak(f"{line}\nValueError: y\n".encode()) is None  # a new record
    assert wrap_width_weak(f"{line}\n    at frame\n".encode()) is None  # an indented line
    assert wrap_width_weak(f"{line}\n\nrest\n".encode()) is None  # a blank line
    assert wrap_width_weak(f"{'y' * 40}\nshort\n".encode()) is None  # narrower than any terminal
    assert wrap_width_weak(f"{line}\nrest of it\n".encode()) == 80


def test_the_grep_engine_depends_on_the_state_machine_not_on_the_python_engine():
    import ast
    from pathlib import Path

    import msdoctor.facts.loggrep as loggrep

    tree = ast.parse(Path(loggrep.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "msdoctor.facts.logstate" in imported and "msdoctor.facts.logscan" not in imported


def test_the_node_msrun_names_leads_the_headline_with_its_caveat(tmp_path):
    # candle-org/MindAct#1983 (msrun console, 910A): the scheduler exit and the timed-out node list
    (tmp_path / "paste.log").write_text(
        "[ERROR] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.720.000 [mindspore/parallel/cluster/"
        "process_entity/_api.py:331] Scheduler process 162146 exit with exception.\n"
        "[ERROR] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.722.000 [mindspore/parallel/cluster/"
        "process_entity/_api.py:431] Time out nodes are ['3']\n"
    )
    rc = run_cli("logs", "--json", str(tmp_path / "paste.log")).json()["root_cause"]
    assert rc["rule"] == "COMM004" and "'3'" in rc["message"]
    assert rc["named_culprit"] and "consequence" in rc["chain"][0]


def test_an_error_no_rule_knows_is_still_named_as_the_first_error(tmp_path):
    # a real CANN driver line (shared/faults.md §4.1): no catalogue rule recognises it
    (tmp_path / "plog-17381_20221201.log").write_text(
        "[ERROR] DRV(17381,python):2022-12-01-03:02:29.391.021 [ascend][curpid: 17381, 17381][drv][tsdrv]"
        "[share_log_read 552]hdc connect down, devid(0) fid(0) tsid(0) hdc connect down, devid(0) fid(0) tsid(0)\n"
    )
    r = run_cli("logs", str(tmp_path / "plog-17381_20221201.log"))
    assert "Root cause: unrecognised error" in r.out and "hdc connect down" in r.out and "not determined" not in r.out


def test_per_node_folders_of_one_job_are_not_taken_for_several_jobs(tmp_path):
    # the same file name in two folders, but the content names two different ranks: one job, two nodes
    for node, worker in (("node_a", "worker_0.log"), ("node_b", "worker_1.log")):
        (tmp_path / node).mkdir()
        shutil.copy(SAMPLES / "hang" / "logs" / worker, tmp_path / node / "rank_0.log")
    r = run_cli("logs", "--json", str(tmp_path))
    assert r.rc == 1 and r.json()["coverage"]["ranks"] == [0, 1]


def test_the_code_on_the_next_line_of_a_message_a_rule_read_is_that_rules_detail(tmp_path):
    # https://discuss.mindspore.cn/t/topic/1156: the runtime result under COMM036's stream failure is not a
    # second fault (NUM030 would have made it the headline, a kernel error, while ranks waited on an eval)
    (tmp_path / "paste.log").write_text(
        "rtStreamSynchronizeWithTimeout execute failed, reason=[the model stream execute failed][FUNC:FuncErrorReason]"
        "[FILE:error_message_manage.cc][LINE:50]\n"
        "synchronize stream failed, runtime result = 507011[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]\n"
    )
    d = run_cli("logs", "--json", str(tmp_path / "paste.log")).json()
    assert [f["rule"] for f in d["findings"]] == ["COMM036"] and d["root_cause"]["rule"] == "COMM036"
    # on its own the same line is a runtime failure of the device
    (tmp_path / "alone.log").write_text(
        "synchronize stream failed, runtime result = 507011[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]\n"
    )
    assert run_cli("logs", "--json", str(tmp_path / "alone.log")).json()["root_cause"]["rule"] == "NUM030"


def test_a_rule_that_read_the_line_as_an_error_keeps_it_from_the_code_family():
    # https://discuss.mindspore.cn/t/topic/1156, two lines joined as a paste that lost its line break: COMM036
    # reads the stream failure; the runtime result inside is its detail, not a kernel fault for NUM030
    second = "synchronize stream failed, runtime result = 507011[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]"
    line = ("rtStreamSynchronizeWithTimeout execute failed, reason=[the model stream execute failed][FUNC:FuncErrorReason]"
            "[FILE:error_message_manage.cc][LINE:50] " + second)  # fmt: skip
    assert "NUM030" in fired(second)
    hits = fired(line)
    assert "NUM030" not in hits and "COMM036" in hits


def test_a_cann_block_opening_with_a_catch_all_under_a_rules_line_is_that_lines_detail(tmp_path):
    # vllm-project/vllm-ascend#5135 (vLLM prefixes as pasted): torch_npu names the failed HCCL call, and the
    # EH9999 block right under it says why; a rule that reads the first line (here a stand-in warning rule,
    # as COMM057 of the corpus branch) keeps the block from becoming a separate runtime/ENV fault
    from msdoctor.engine.catalogue import parse_rule
    from msdoctor.engine.evaluate import SignatureSet
    from msdoctor.facts.logscan import ScanSpec, scan_file

    text = "\n".join(f"{k} = '''{v}'''" for k, v in {
        "id": "COMM999", "title": "stand-in", "severity": "warning", "area": "COMM", "role": "consequence",
        "detects": "stand-in rule for the test", "cause": "stand-in rule for the test", "confirm": "stand-in rule",
        "fix": "stand-in rule for the test", "example": "ERR02200 DIST call hccl api failed"}.items())
    text += "\nreferences = ['test']\n[[signatures]]\npattern = '''ERR02200 DIST call hccl api failed'''\n"
    stand_in = parse_rule(text, "COMM999.toml", area_dir="comm")
    cat = load_catalogue()
    sigs = SignatureSet([stand_in] + [r for r in cat if r.id in ("NUM030", "ENV050", "MEM040", "COMM080")])
    log = tmp_path / "paste.log"
    log.write_text(
        "ERROR 12-17 09:31:58 [engine.py:458] [ERROR] 2025-12-17-09:31:53 (PID:53769, Device:0, RankID:-1) ERR02200 "
        "DIST call hccl api failed.\n"
        "ERROR 12-17 09:31:58 [engine.py:458] EH9999: Inner Error!\n"
        "ERROR 12-17 09:31:58 [engine.py:458] EH9999: [PID: 53769] 2025-12-17-09:31:39.804.969 rtSetStreamFailureMode "
        "failed, runtime result = 207000.[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]\n"
    )
    assert set(scan_file(str(log), ScanSpec(sigs, engine="python"))["hits"]) == {"COMM999"}
    log.write_text(log.read_text().split("\n", 1)[1])  # without the line it explains, the block is the fault
    assert set(scan_file(str(log), ScanSpec(sigs, engine="python"))["hits"]) == {"NUM030", "ENV050"}


def test_the_source_a_traceback_quotes_is_not_read_as_the_message(tmp_path):
    # tinyms#70 (tests/realworld/logs/tinyms-70-…): the traceback quotes `raise ValueError("The file {} …"
    # .format(dataset_file))`; the message is the line below it, with the real path
    src = Path(__file__).resolve().parents[1] / "realworld" / "logs" / "tinyms-70-minddataset-file-does-not-exist-2021"
    d = run_cli("logs", "--json", str(src / "paste.log")).json()
    texts = [e["text"] for f in d["findings"] for e in f["evidence"] if isinstance(e, dict)]
    assert texts and not any("raise ValueError" in t for t in texts)
    assert "mnist/train" in d["root_cause"]["message"]


def test_an_unrecognised_error_is_not_reported_as_no_error(tmp_path):
    # a model-zoo `raise Exception(...)` no rule knows: the root cause says "unrecognised error", so the
    # summary must not also say that no error was found
    log = tmp_path / "paste.txt"
    log.write_text("Exception: Error loading data from ./coco/train2017.txt: coco/train2017.txt does not exist\n")
    r = run_cli("logs", str(log))
    assert r.rc != 2 and "unrecognised error" in r.out or "DATA" in r.out
    assert "No error found" not in r.out
    assert r.rc == 1  # an error was read: exit 0 would claim a clean bill of health


# xLLM-AI/xllm#41: glog lines of a known grammar, then the shell's report that the server died of SIGSEGV
XLLM_SEGFAULT = (
    "I20250827 17:44:25.441357 220755 master.cpp:59] Creating engine with devices: npu:1\n"
    "I20250827 17:44:25.441409 220755 dist_manager.cpp:105] Multi-node serving world_size = 1, each_node_ranks = 1, "
    "current node rank = 0, nnodes = 1, dp_size = 1, ep_size = 1\n"
    "Segmentation fault (core dumped)\n"
)


@pytest.mark.parametrize(("crash", "verdict"), [
    ("Segmentation fault (core dumped)", "unrecognised error"),
    ("./run.sh: line 380: 3535176 Segmentation fault      (core dumped) python serve.py", "unrecognised error"),
    ("Fatal Python error: Aborted", "unrecognised error"),
    # a bus error is MEM048's since round 76 (d: SIGBUS of a shared-memory segment that cannot grow)
    ("Bus error (core dumped)", "MEM048"),
])  # fmt: skip
def test_a_process_killed_by_a_signal_is_an_error_in_a_log_of_any_grammar(tmp_path, crash, verdict):
    # the dead process could not log its end at a level: the shell's line is the error, and exit 0 with
    # "No error found" would be a false clean bill of health
    log = tmp_path / "paste.log"
    log.write_text(XLLM_SEGFAULT.replace("Segmentation fault (core dumped)", crash))
    r = run_cli("logs", str(log))
    assert "No error found" not in r.out
    assert verdict in r.out and crash.split(" (")[0][-12:] in r.out
    assert r.rc == 1
    alone = tmp_path / "alone.log"  # no other line of a known grammar: the plain-paste reading still sees it
    alone.write_text(f"loading model\n{crash}\n")
    assert run_cli("logs", str(alone)).rc == 1


def test_words_like_a_crash_inside_a_message_are_not_a_crash(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text(XLLM_SEGFAULT.replace("Segmentation fault (core dumped)",
                                         "Aborted request(s) ['chatcmpl-1'] after the client closed it"))
    r = run_cli("logs", str(log))
    assert r.rc == 0 and "No error found" in r.out


def test_pip_error_lines_are_a_log_and_name_the_requirement(tmp_path):
    log = tmp_path / "pip.txt"
    log.write_text("ERROR: Could not find a version that satisfies the requirement torch-npu==2.5.1.post1.dev20250619 "
                   "(from versions: 2.1.0.post8, 2.5.1)\nERROR: No matching distribution found for "
                   "torch-npu==2.5.1.post1.dev20250619\n")
    d = run_cli("logs", "--json", str(log)).json()
    assert d["root_cause"]["rule"] == "ENV098"
    assert "torch-npu==2.5.1.post1.dev20250619" in d["root_cause"]["message"]


def test_an_exception_quoted_inside_chinese_prose_is_read(tmp_path):
    # llamafactory#6154 as pasted: the user's sentence, then the exception on the same line
    log = tmp_path / "issue.txt"
    log.write_text("0.9.1在modelarts上用的时候，多机多卡训练，节点之间的通信超时了。但是我用0.8.3版本，训练是正常的。"
                   "torch.distributed.DistStoreError: Socket Timeout\n", encoding="utf-8")
    d = run_cli("logs", "--json", str(log)).json()
    assert d["root_cause"]["rule"].startswith("COMM")


def test_bare_exception_class_lines_are_exceptions():
    from msdoctor.facts.logformats import parse_line

    rec = parse_line("Exception: Error loading data from ./coco/train2017.txt: coco/train2017.txt does not exist")
    assert (rec.grammar, rec.exc_type) == ("python-exc", "Exception")
    assert parse_line("Exception").grammar == "plain"


# vllm-project/vllm-ascend#1006: the exception line joined with the CANN line under it takes that line's stamp, so
# the AICPU `open so failed` (the kernel library, ENV054) stays before the TraceBack lines that inherit the stamp
AICPU_OPEN_SO = (
    "call aclnnNonzeroV2 failed, detail:E39999: Inner Error!\n"
    "E39999: [PID: 85141] 2025-05-29-12:09:01.468.164 The error from device(chipId:0, dieId:0), serial number is 3, "
    "an exception occurred during AICPU execution, stream_id:6, task_id:2895, errcode:11002, msg:open so failed."
    "[FUNC:ProcessStarsAicpuErrorInfo][FILE:device_error_proc.cc][LINE:1479]\n"
    "        TraceBack (most recent call last):\n"
    "       Kernel task happen error, retCode=0x2a, [aicpu exception].[FUNC:PreCheckTaskErr]"
    "[FILE:davinci_kernel_task.cc][LINE:1356]\n"
)  # fmt: skip


def test_joined_line_takes_the_stamp_of_the_line_it_joined(tmp_path):
    log = tmp_path / "serve.log"
    log.write_text(AICPU_OPEN_SO, encoding="utf-8")
    d = run_cli("logs", "--json", str(log)).json()
    assert d["root_cause"]["rule"] == "ENV054"
    env = next(f for f in d["findings"] if f["rule"] == "ENV054")
    assert env["data"]["first_time"] is not None


def test_device_exception_report_yields_to_the_timeout_of_its_block(tmp_path):
    # hw-native-sys/PTOAS#726: `there is an exception of aicore error … error code = 0` is refined by the
    # `retCode=0x25, [aicore timeout]` line of the same CANN block (same stamp): the timeout is the headline
    src = Path(__file__).resolve().parents[1] / "realworld/logs/ptoas-726-syncall-aicore-timeout-507014-2026/paste.log"
    log = tmp_path / "board.log"
    shutil.copy(src, log)
    assert run_cli("logs", "--json", str(log)).json()["root_cause"]["rule"] == "NUM011"


def test_a_traceback_without_its_exception_line_is_not_a_clean_exit(tmp_path):
    log = tmp_path / "cut.txt"
    log.write_text('Traceback (most recent call last):\n'
                   '  File "/usr/lib/python3.11/site-packages/sglang/srt/managers/tp_worker.py", line 238, in forward\n'
                   '    logits_output = self.model_runner.forward(\n', encoding="utf-8")
    r = run_cli("logs", str(log))
    assert "incomplete traceback" in r.out and r.rc == 1


# PaddlePaddle/Paddle#72458 (PaddleCustomDevice runtime check, a space before the colon; 507008 → ENV050 by the data)
PADDLE_ACLINIT = "Call aclInit(nullptr) failed : 507008 at file /work/PaddleCustomDevice/backends/npu/runtime/runtime.cc line 403"
# vllm-project/vllm-ascend#6190 (the sentence names a compute operator, the inner error was not kept)
INNER_RMSNORM = ("(Worker_TP0 pid=415) ERROR 01-16 11:51:23 [multiproc_executor.py:671] RuntimeError: The Inner error is "
                 "reported as above. The process exits for this inner error, and the current working operator name is "
                 "aclnnRmsNorm.")  # fmt: skip
# mindspore-lab/mindyolo#276
YOLO_NO_IMAGES = ("Exception: Error loading data from /home/jiasj/chenruoshui/mindyolo-master/mindyolo-master/mindyolo/"
                  "dataset/VOC2012/train2012.txt: No images found")  # fmt: skip


def test_paddle_custom_npu_runtime_check_code_is_read(tmp_path):
    assert fired(PADDLE_ACLINIT)["ENV050"]["acl_code"] == "507008"
    log = tmp_path / "paddle.log"
    log.write_text(PADDLE_ACLINIT + "\n", encoding="utf-8")
    assert run_cli("logs", "--json", str(log)).json()["root_cause"]["rule"] == "ENV050"


def test_inner_error_naming_a_compute_operator_is_a_pointer_not_a_verdict(tmp_path):
    hits = fired(INNER_RMSNORM)
    assert hits["NUM019"]["op"] == "aclnnRmsNorm" and "COMM078" not in hits
    log = tmp_path / "serve.log"
    log.write_text(INNER_RMSNORM + "\n", encoding="utf-8")
    d = run_cli("logs", "--json", str(log)).json()
    assert (d.get("root_cause") or {}).get("rule") != "NUM019"  # info: the operator name alone decides no area
    assert any(f["rule"] == "NUM019" and f["severity"] == "info" for f in d["findings"])


def test_yolo_dataset_list_without_images_is_data(tmp_path):
    assert fired(YOLO_NO_IMAGES)["DATA019"]["reason"] == "No images found"
    log = tmp_path / "yolo.log"
    log.write_text(YOLO_NO_IMAGES + "\n", encoding="utf-8")
    assert run_cli("logs", "--json", str(log)).json()["root_cause"]["rule"] == "DATA019"


def test_acl_2000xx_codes_other_than_bad_alloc_are_setup_faults_not_memory(tmp_path):
    # acl_base.h: only 200000 (ACL_ERROR_BAD_ALLOC) is an allocation failure; 200001-200006 are an API, device,
    # alignment or stream/context handle that does not fit. CANN 7.0.0 PyTorch migration guide AImpug_000152
    # (a thread that switched NPU devices): the exit-time synchronize fails with 200005 after ExchangeDevice 500000.
    assert lookup("200000").rule == "MEM040"  # type: ignore[union-attr]
    assert lookup("200005").rule == "ENV050" and "RESOURCE_HANDLE" in lookup("200005").meaning  # type: ignore[union-attr]
    assert {lookup(str(c)).rule for c in range(200001, 200007)} == {"ENV050"}  # type: ignore[union-attr]
    line = "RuntimeError: npuSynchronizeDevice:/***/code/pytorch/c10/npu/NPUStream.cpp:776 NPU error, error code is 200005."
    assert "MEM040" not in fired(line)
    log = tmp_path / "paste.log"
    log.write_text(
        "……\n"
        "RuntimeError : ExchangeDevice:/home/***/pytorch/c10/npu/sys_ctrl/npu_sys_ctrl.cpp:56 NPU error, error code is 500000\n"
        "Error in atexit._run_exitfuncs:\n"
        "……\n" + line + "\n", encoding="utf-8")  # fmt: skip
    assert run_cli("logs", "--json", str(log)).json()["root_cause"]["rule"] == "ENV736"


# EdwardXuy/log-doc DEV_FAILURE_ANALYSIS.md (sglang EAGLE3 + DP LM head on A3): torch_npu's ERR00100 with EI0002's
# "Possible Cause" list of a failed collective, then the runtime's catch-all EE9999 lines
TSFW = Path(__file__).resolve().parents[1] / "realworld/logs/sglang-ascend-eagle3-dp-lm-head-rtmemcpyasync-tsfw-unknown-error-2026"
POSSIBLE_CAUSE = re.compile(r"Possible Cause|As a result, collective|^ {8}[234]\. |communication operation within|is 1800s")


def test_a_runtime_catch_all_beside_a_collective_time_out_is_its_consequence(tmp_path):
    # the EE9999 `rtDeviceSynchronizeWithTimeout … tsfw unknown error` lines report the stream the failed
    # collective held: the collective heads; without the collective's text the same EE9999 lines head again
    d = run_cli("logs", "--json", str(TSFW / "paste.log")).json()
    assert d["root_cause"]["rule"] == "COMM139"
    assert any(f["rule"] == "NUM030" for f in d["findings"])
    log = tmp_path / "paste.log"
    log.write_text("".join(ln for ln in (TSFW / "paste.log").read_text(encoding="utf-8").splitlines(keepends=True)
                           if not POSSIBLE_CAUSE.search(ln)), encoding="utf-8")  # fmt: skip
    assert run_cli("logs", "--json", str(log)).json()["root_cause"]["rule"] == "NUM030"
