"""Engine gaps seen on real pastes (issue 11, round 2): a traceback cut before its exception line, frames of a
traceback whose header was cut, a C++ exception's `what():` line, INFO lines a rule needs, a line a rule
matches that carries no error marker, and HCCL's return-code names. Log lines are copied exactly from the
corpus cases named beside them (tests/realworld/logs/)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from msdoctor.engine.catalogue import Signature, load_catalogue
from msdoctor.engine.codes import hccl_code_in, hccl_result
from msdoctor.engine.evaluate import SignatureSet
from msdoctor.facts.logscan import ScanSpec, scan_file
from tests.conftest import run_cli

# mindocr#136 (tests/realworld/logs/mindocr-136-…): the traceback and its exception line
MINDOCR_FRAMES = [
    "Traceback (most recent call last):",
    '  File "/data3/cty/mind_lab/test_mindocr/mindocr/tools/train.py", line 182, in <module>',
    "    main(config)",
    '  File "/data3/cty/mind_lab/test_mindocr/mindocr/tools/train.py", line 72, in main',
    "    loader_eval = build_dataset(",
    '  File "/data3/cty/mind_lab/test_mindocr/mindocr/mindocr/data/builder.py", line 105, in build_dataset',
    "    dataset = dataset_class(**dataset_args)",
    '  File "/data3/cty/mind_lab/test_mindocr/mindocr/mindocr/data/rec_lmdb_dataset.py", line 68, in __init__',
    "    _data = self.data_idx_order_list[0]",
]
MINDOCR_EXC = "IndexError: index 0 is out of bounds for axis 0 with size 0"


def _spec(engine: str) -> ScanSpec:
    from msdoctor.engine.evaluate import signature_set

    sigs = signature_set(load_catalogue())
    return ScanSpec(sigs, engine="python") if engine == "python" else ScanSpec(sigs, grep_min_size=0)


# -- a traceback whose exception line is missing --------------------------------------------------------


@pytest.mark.parametrize("lines", [MINDOCR_FRAMES, MINDOCR_FRAMES[3:]], ids=["with-header", "frames-only"])
def test_a_traceback_cut_before_its_exception_is_read_and_said_not_diagnosable(tmp_path, lines):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(lines) + "\n")
    r = run_cli("logs", "--json", str(log))
    assert r.rc != 2, r.err  # traceback frames are a known grammar: the file is read, not rejected
    rc = r.json()["root_cause"]
    assert rc["verdict"] == "incomplete-traceback" and rc["rule"] is None
    assert "not diagnosable" in rc["reason"] and "without its exception line" in rc["reason"]
    assert "paste the lines after" in rc["reason"]
    # the innermost frames are a dataset module: named as a hint, never as a root cause
    assert "DATA code" in rc["reason"] and "rec_lmdb_dataset.py" in rc["reason"] and "not a cause" in rc["reason"]
    assert not [f for f in r.json()["findings"] if f["severity"] in ("error", "warning")]
    text = run_cli("logs", str(log)).out
    assert "incomplete traceback" in text and "No error found" not in text


# The call a cut traceback stopped in: the source line under its innermost frame, else a frame's function.
# Lines copied from real pastes: LLaMA-Factory#8306 (a rank waiting in main_process_first), sglang#28628 (the
# torch_npu import), vllm-ascend#11368 (the weight loader), and a frame with no call of any area (mindnlp on
# an Orange Pi: the user's script).
CUT_LF = ['[rank8]:   File "/home/xuzhi/code/r1_qwen/LLaMA-Factory-main/src/llamafactory/data/loader.py", line 303, in get_dataset',
          '[rank8]:     with training_args.main_process_first(desc="load dataset"):']
CUT_IMPORT = ['File "/usr/local/python3.11.14/lib/python3.11/site-packages/torch_npu/utils/__init__.py", line 4, in <module>',
              "    from torch_npu import _C"]
CUT_LOAD = ['(EngineCore pid=568)   File "/usr/local/python3.11.10/lib/python3.11/site-packages/vllm/model_executor/model_loader/default_loader.py", line 381, in load_weights',
            "(EngineCore pid=568)     loaded_weights = model.load_weights(self.get_all_weights(model_config, model))"]
CUT_NONE = ["Traceback (most recent call last):",
            '  File "/home/HwHiAiUser/orange-pi-mindspore/Online/14-qwen1.5-0.5b/qwen1.5-0.5b.py", line 9, in <module>',
            '    model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen1.5-0.5B-Chat", ms_dtype=mindspore.float16)']


@pytest.mark.parametrize("lines, rule, said", [
    (CUT_LF, "COMM097", "main_process_first("),
    (CUT_IMPORT, "ENV097", "from torch_npu import _C"),
    (CUT_LOAD, "CKPT097", "model.load_weights("),
    (MINDOCR_FRAMES, "DATA097", "rec_lmdb_dataset.py"),  # no call of an area: the innermost path names DATA
])  # fmt: skip
def test_a_cut_traceback_guesses_the_area_of_the_call_it_stopped_in(tmp_path, lines, rule, said):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(lines) + "\n")
    d = run_cli("logs", "--json", str(log)).json()
    assert d["root_cause"]["verdict"] == "incomplete-traceback" and d["root_cause"]["rule"] is None
    guesses = [f for f in d["findings"] if f["rule"].endswith("097")]
    assert [f["rule"] for f in guesses] == [rule] and guesses[0]["severity"] == "info"
    assert said in guesses[0]["message"] and "not a diagnosis" in guesses[0]["message"]
    assert said in d["root_cause"]["reason"]  # the verdict names the same call as its hint


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_both_engines_keep_the_call_a_cut_traceback_stopped_in(tmp_path, engine):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(["some output", *CUT_LF]) + "\n")
    tb = scan_file(str(log), _spec(engine))["open_traceback"]
    assert tb["calls"] == ["get_dataset"] and tb["code"] == 'with training_args.main_process_first(desc="load dataset"):'


def test_a_cut_traceback_whose_calls_name_no_area_gets_no_guess(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(CUT_NONE) + "\n")
    d = run_cli("logs", "--json", str(log)).json()
    assert d["root_cause"]["verdict"] == "incomplete-traceback"
    assert not [f for f in d["findings"] if f["rule"].endswith("097")]


def test_a_traceback_that_ends_in_its_exception_is_not_incomplete(tmp_path, spec):
    log = tmp_path / "paste.log"
    log.write_text("\n".join([*MINDOCR_FRAMES, MINDOCR_EXC]) + "\n")
    assert scan_file(str(log), spec)["open_traceback"] is None
    rc = run_cli("logs", "--json", str(log)).json()["root_cause"]
    assert rc.get("verdict") != "incomplete-traceback"


def test_frames_followed_by_an_error_line_a_rule_reads_are_not_incomplete(tmp_path, spec):
    # vllm-ascend#382's watchdog error after frames (no Python exception line closes them)
    log = tmp_path / "paste.log"
    log.write_text("\n".join([*MINDOCR_FRAMES[:3],
                              "terminate called after throwing an instance of 'std::runtime_error'",
                              "  what():  [Rank 1] HCCL watchdog thread terminated with exception: [Rank 1] Watchdog caught "
                              "collective operation timeout: WorkHCCL(SeqNum=196, OpType=ALLREDUCE, Timeout(ms)=3600000) ran for "
                              "3600185 milliseconds before timing out."]) + "\n")  # fmt: skip
    assert scan_file(str(log), spec)["open_traceback"] is None


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_frames_reach_the_exception_when_the_traceback_header_was_cut(tmp_path, engine):
    log = tmp_path / "paste.log"
    log.write_text("\n".join([*MINDOCR_FRAMES[3:], MINDOCR_EXC]) + "\n")
    ev = next(e for e in scan_file(str(log), _spec(engine))["first_events"] if e.get("exc_type") == "IndexError")
    assert ev["frames"][-1].endswith("mindocr/data/rec_lmdb_dataset.py") and len(ev["frames"]) == 3


def test_a_model_zoo_data_module_frame_counts_for_data_but_never_decides_alone():
    from msdoctor.facts.logfamily import classify, scores

    frames = [ln.split('"')[1] for ln in MINDOCR_FRAMES if ln.lstrip().startswith("File ")]
    sc = scores([MINDOCR_EXC], frames=frames)
    assert sc["DATA"][0] == 2.0  # one frame count, below min_score
    assert classify([MINDOCR_EXC], frames=frames) is None  # frames alone never name the area


# -- a C++ exception and its what() line ------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_what_is_joined_into_the_cpp_exception(tmp_path, engine):
    # mindie-gpustack-3551: the std::out_of_range and its what() on the next line
    log = tmp_path / "paste.log"
    log.write_text("terminate called after throwing an instance of 'std::out_of_range'\n  what():  _Map_base::at\n")
    evs = scan_file(str(log), _spec(engine))["first_events"]
    assert [e["text"] for e in evs] == ["std::out_of_range: _Map_base::at"] and evs[0]["line"] == 1


def test_a_rule_reads_the_what_message_of_a_cpp_exception(tmp_path, spec):
    # vllm-ascend#382: the watchdog time-out is the what() of a std::runtime_error
    log = tmp_path / "paste.log"
    log.write_text("terminate called after throwing an instance of 'std::runtime_error'\n"
                   "  what():  [Rank 1] HCCL watchdog thread terminated with exception: [Rank 1] Watchdog caught collective "
                   "operation timeout: WorkHCCL(SeqNum=196, OpType=ALLREDUCE, Timeout(ms)=3600000) ran for 3600185 "
                   "milliseconds before timing out.\n")  # fmt: skip
    hits = scan_file(str(log), spec)["hits"]
    assert "COMM040" in hits and hits["COMM040"]["count"] == 1 and hits["COMM040"]["first"]["line"] == 1


# -- INFO lines and lines without an error marker -------------------------------------------------------

HEARTBEAT_INFO = ("[INFO] HCCL(686,python):2025-10-23-07:52:59.191.363 [heartbeat.cc:951] [8970][HCCL_TRACE]rank "
                  "[127.10.0.1/1]: rank [127.10.0.1/9] status[LOST] by rank [127.10.0.1/1]")  # fmt: skip


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_a_rule_that_needs_an_info_line_reads_it(tmp_path, engine):
    """No opt-in is needed: the level of a line never keeps it from the rules (the pre-filter holds every
    rule's anchor, matching ignores the level); an INFO line only never becomes an unclassified error."""
    base = load_catalogue().get("COMM052")
    pat = r"rank \[(?P<reporter>[\d.]+/\d+)\]: rank \[(?P<peer_node>[\d.]+/\d+)\] status\[LOST\]"
    rule = dataclasses.replace(base, id="COMM998", signatures=(Signature(pat, re.compile(pat)),))
    sigs = SignatureSet([rule])
    spec = ScanSpec(sigs, engine="python") if engine == "python" else ScanSpec(sigs, grep_min_size=0)
    log = tmp_path / "plog.log"
    log.write_text(HEARTBEAT_INFO + "\n")
    hit = scan_file(str(log), spec)["hits"]["COMM998"]["first"]
    assert hit["groups"] == {"reporter": "127.10.0.1/1", "peer_node": "127.10.0.1/9"}


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_a_line_without_an_error_marker_reaches_the_rule_that_matches_it(tmp_path, engine):
    # a TensorFlow shape error quoted on its own, indented, without an `Error` word (PAR001's wording)
    line = "    Dimensions must be equal, but are 4 and 2 for DQfD_0/eval_net/l1/MatMul (op:'Matmul') with input shapes: [?,4], [2,24]."
    noise = "    Some unrelated text with numbers 4 and 2 but no rule\n"
    log = tmp_path / "paste.log"
    log.write_text(noise * 3 + line + "\n")
    out = scan_file(str(log), _spec(engine))
    assert out["hits"]["PAR001"]["first"]["groups"] == {"x1_col": "4", "x2_row": "2", "op": "Matmul"}
    # a markerless line no rule reads is not an error candidate: the fallback never guesses from prose
    assert all(e.get("rule") for e in out["first_events"])


# -- HCCL's return codes --------------------------------------------------------------------------------


def test_hcclresult_names_come_from_data():
    assert hccl_result(5) == ("HCCL_E_NOT_SUPPORT", "not support feature")
    assert hccl_result("9") == ("HCCL_E_TIMEOUT", "timeout") and hccl_result(99) is None


@pytest.mark.parametrize("text,code", [
    ("RuntimeError: create_config:torch_npu/csrc/distributed/HCCLUtils.cpp:148 HCCL function error: "
     "hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 5", 5),
    ("OPS function error: HcclAllGather, error code is 6", 6),
    ("Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module. ret = 9, comm = 0xfffec1e5e800.", 9),
    ("HcclCommInitClusterInfo failed, ret:4", 4),
    ("NPU function error: call failed, error code is 507014", None),  # an ACL code: not HCCL's
    ("OPS function error: RepeatInterleave, error code is 500002", None),
])  # fmt: skip
def test_hccl_code_only_for_an_hccl_call(text, code):
    found = hccl_code_in(text)
    assert (found[0] if found else None) == code


def test_the_finding_names_the_hcclresult(tmp_path):
    # gpustack#4652 (tests/realworld/logs/gpustack-4652-…)
    log = tmp_path / "paste.log"
    log.write_text("RuntimeError: create_config:torch_npu/csrc/distributed/HCCLUtils.cpp:148 HCCL function error: "
                   "hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 5\n")
    rc = run_cli("logs", "--json", str(log)).json()["root_cause"]
    assert "code 5 = HCCL_E_NOT_SUPPORT (not support feature)" in rc["message"]


def test_a_cut_traceback_beside_only_a_consequence_is_not_headlined_by_it(tmp_path):
    # vllm-ascend#405's torch_npu umbrella line (COMM057, a consequence) says nothing of what failed; the
    # exception that would is the line missing after the frames (an error line after the frames would close them)
    log = tmp_path / "paste.log"
    log.write_text("[rank0]: [ERROR] 2025-03-26-17:01:03 (PID:159, Device:0, RankID:-1) ERR02200 DIST call hccl api failed.\n"
                   + "\n".join(MINDOCR_FRAMES) + "\n")
    d = run_cli("logs", "--json", str(log)).json()
    assert d["root_cause"]["verdict"] == "incomplete-traceback" and d["root_cause"]["rule"] is None
    assert "COMM057" in {f["rule"] for f in d["findings"]}  # still listed, only not the headline


def test_a_cut_traceback_after_its_error_line_is_only_an_echo(tmp_path):
    # vLLM prints the error, then the traceback (gpustack#4652's paste ends inside that traceback)
    log = tmp_path / "paste.log"
    log.write_text("RuntimeError: create_config:torch_npu/csrc/distributed/HCCLUtils.cpp:148 HCCL function error: "
                   "hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 5\n"
                   + "\n".join(MINDOCR_FRAMES) + "\n")  # fmt: skip
    rc = run_cli("logs", "--json", str(log)).json()["root_cause"]
    assert rc["rule"] == "COMM043" and rc["verdict"] == "first-error"


def test_an_unrecognised_error_raised_in_a_data_module_says_where_but_names_no_cause(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("\n".join([*MINDOCR_FRAMES, MINDOCR_EXC]) + "\n")
    rc = run_cli("logs", "--json", str(log)).json()["root_cause"]
    assert rc["verdict"] == "unrecognised-error" and rc["rule"] is None
    assert "raised in DATA code" in rc["reason"] and "rec_lmdb_dataset.py" in rc["reason"]


# -- a bare pasted AttributeError / ImportError message without its exception head ----------------------


@pytest.mark.parametrize("line, rule", [
    # mindnlp#1522 (tests/realworld/logs/mindnlp-1522-…): the message alone, no `AttributeError:` head
    ("module 'mindnlp.core.ops' has no attribute 'isin'", "ENV027"),
])  # fmt: skip
def test_a_bare_has_no_attribute_paste_is_read_as_the_error(tmp_path, line, rule):
    from msdoctor.facts.logstate import PASTE_ERROR_RE

    assert PASTE_ERROR_RE.search(line)
    assert PASTE_ERROR_RE.search("No module named 'mindspore.ops._grad'")
    log = tmp_path / "paste.log"
    log.write_text(line + "\n")
    rc = run_cli("logs", "--json", str(log)).json()["root_cause"]
    assert rc.get("rule") == rule


# -- the error around a cut traceback: the text is read as a paste ----------------------------------------

# vllm-ascend#439 (tests/realworld/logs/vllm-ascend-439-…): CMake's error, pip's indentation, then pip's traceback cut
# before its exception line
PIP_CMAKE = [
    "      running build_ext",
    "      -- The CXX compiler identification is unknown",
    "      CMake Error at CMakeLists.txt:14 (project):",
    "        No CMAKE_CXX_COMPILER could be found.",
    "",
    "      -- Configuring incomplete, errors occurred!",
    "      Traceback (most recent call last):",
    '        File "/usr/local/python3.10/lib/python3.10/site-packages/pip/_vendor/pyproject_hooks/_in_process/_in_process.py", line 389, in <module>',
    "          main()",
    '        File "/usr/local/python3.10/lib/python3.10/site-packages/pip/_vendor/pyproject_hooks/_in_process/_in_process.py", line 373, in main',
    '          json_out["return_val"] = hook(**hook_input["kwargs"])',
]
# ms-swift#6968 (tests/realworld/logs/ms-swift-6968-…, paste2.log): a frame whose source line holds an error word
SWIFT_FRAMES = [
    '  File "/home/ma-user/anaconda3/envs/PyTorch-2.6.0/lib/python3.10/importlib/__init__.py", line 126, in import_module',
    "    return _bootstrap._gcd_import(name[level:], package, level)",
    '  File "/home/ma-user/anaconda3/envs/PyTorch-2.6.0/lib/python3.10/subprocess.py", line 420, in check_output',
    "    return run(*popenargs, stdout=PIPE, timeout=timeout, check=True,",
]
# sglang#8004 (tests/realworld/logs/sglang-8004-…): SGLang's import guard on NPU (ENV986, info) above a cut traceback
SGLANG_GUARD = [
    "[2025-08-03 03:28:14 TP7] Failed to import from custom_ar with ModuleNotFoundError(\"No module named 'sgl_kernel'\")",
    "[2025-08-03 03:28:18 TP6] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/usr/local/python3.11.13/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2421, in run_scheduler_process',
    "    scheduler = Scheduler(",
]


def _catalogue_without(*ids: str):
    """The catalogue less ``ids``: a first sighting of the lines those rules were written for."""
    import copy

    cat = copy.copy(load_catalogue())
    cat._rules = {k: v for k, v in cat._rules.items() if k not in ids}
    cat.__dict__.pop("_signature_set", None)
    return cat


def test_an_error_line_before_a_cut_traceback_is_read_as_a_pastes_error(tmp_path):
    from msdoctor.checks.logs import unclassified_events
    from msdoctor.facts.logs import collect

    log = tmp_path / "paste.log"
    log.write_text("\n".join(PIP_CMAKE) + "\n")
    facts, _scan = collect([str(log)], catalogue=_catalogue_without("ENV748"))
    texts = [e["text"] for e in unclassified_events(facts)]
    assert texts and texts[0] == "CMake Error at CMakeLists.txt:14 (project):", texts
    assert "Configuring incomplete, errors occurred!" in " ".join(texts)  # CMake's summary, a later error of the block
    # with the rule that knows the line, the rule reads it (no paste reading is needed)
    r = run_cli("logs", "--json", str(log))
    assert r.json()["root_cause"]["rule"] == "ENV748"


def test_a_cut_traceback_alone_stays_not_diagnosable_and_its_source_lines_are_not_errors(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(SWIFT_FRAMES) + "\n")
    rc = run_cli("logs", "--json", str(log)).json()["root_cause"]
    assert rc["verdict"] == "incomplete-traceback", rc  # `timeout=timeout` under a frame is its source, not an error


def test_a_line_an_info_rule_knows_is_not_a_pastes_error_beside_a_cut_traceback(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(SGLANG_GUARD) + "\n")
    d = run_cli("logs", "--json", str(log)).json()
    rules = {f["rule"] for f in d["findings"]}
    assert "ENV986" in rules and not any(r.endswith("099") for r in rules), rules
    assert d["root_cause"]["verdict"] == "incomplete-traceback"


# -- a progress printer's dots glued to the next line ---------------------------------------------------

# vllm-ascend#2720 (tests/realworld/logs/vllm-ascend-2720-…): vLLM-Ascend's compile progress dots, then torch_npu's c10
# error; vllm-ascend#2725 (…-2725-…): the dots before a `[ERROR]` line
DOTS = [
    "INFO 09-03 07:21:18 [backends.py:215] Compiling a graph for dynamic shape takes 1.81 s",
    ".[rank0]:[E903 07:21:23.263967696 compiler_depend.ts:429] RopeOperation setup failed!",
]


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_progress_dots_before_a_line_do_not_hide_its_prefix(tmp_path, engine):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(DOTS) + "\n")
    s = scan_file(str(log), _spec(engine))
    ev = [e for e in s["first_events"] if "RopeOperation" in e["text"]]
    assert ev and ev[0]["text"] == "RopeOperation setup failed!" and ev[0].get("prank") == 0, s["first_events"]


def test_a_dot_before_a_path_or_a_lowercase_word_is_kept():
    from msdoctor.facts.logstate import PROGRESS_DOTS_RE

    assert PROGRESS_DOTS_RE.match("..[ERROR] the socversion Ascend910B1 of bin package does not match")
    assert not PROGRESS_DOTS_RE.match("./run.sh: line 3: python: command not found")
    assert not PROGRESS_DOTS_RE.match(".so file not found")


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_an_info_rules_echo_line_stays_an_echo(tmp_path, engine):
    # NUM019 (info, a consequence) knows torch_npu's echo of an error printed above it: the line is marked as an
    # echo, whatever else an info rule's line is (round 49 added `known` beside `echo`; the echo must not be lost)
    log = tmp_path / "x.log"
    log.write_text("Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n"
                   "RuntimeError: The Inner error is reported as above. The process exits for this inner error, and "
                   "the current working operator name is MatMul.\n", encoding="utf-8")  # fmt: skip
    evs = [e for e in scan_file(str(log), _spec(engine))["first_events"] if e.get("role") == "unclassified"]
    assert evs and all(e.get("echo") for e in evs), evs


# vllm-ascend#9736 (tests/realworld/logs/vllm-ascend-9736-…): a wrapper code (507011, model execution failed: a
# consequence) above a traceback cut before its exception line. The verdict is "incomplete traceback" (the missing
# exception would name the cause), and it still says which error was read beside it — never "not diagnosable"
# while an error finding goes unmentioned.
WRAPPER_THEN_CUT = "\n".join([
    "(Worker_DP2_TP1_EP9 pid=3132327) ERROR 05-30 11:43:13 [multiproc_executor.py:962]        synchronize stream with timeout failed, runtime result = 507011[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:148]",
    "(Worker_DP2_TP1_EP9 pid=3132327) ERROR 05-30 11:43:13 [multiproc_executor.py:962]",
    "(Worker_DP2_TP1_EP9 pid=3132327) ERROR 05-30 11:43:13 [multiproc_executor.py:962] Traceback (most recent call last):",
    '(Worker_DP2_TP1_EP9 pid=3132327) ERROR 05-30 11:43:13 [multiproc_executor.py:962]   File "/home/l00889328/test_deep_v4/vllm/vllm/v1/executor/multiproc_executor.py", line 957, in worker_busy_loop',
    "(Worker_DP2_TP1_EP9 pid=3132327) ERROR 05-30 11:43:13 [multiproc_executor.py:962]     output = func(*args, **kwargs)",
]) + "\n"  # fmt: skip


def test_a_cut_traceback_verdict_names_the_consequence_beside_it(tmp_path) -> None:
    import json

    log = tmp_path / "paste.log"
    log.write_text(WRAPPER_THEN_CUT, encoding="utf-8")
    r = run_cli("logs", "--json", str(log))
    rc = json.loads(r.out)["root_cause"]
    assert rc["verdict"] == "incomplete-traceback", rc
    assert rc.get("beside") == "NUM030" and "Beside it, NUM030" in rc["reason"] and "507011" in rc["reason"], rc
    r = run_cli("logs", str(log))
    assert "Beside it, NUM030" in r.out, r.out
