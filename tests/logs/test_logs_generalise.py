"""Grammars and the fallback on log forms met in real MindIE / sglang / verl / LLaMA-Factory pastes (issue 11):
prefixes that carry a level, time stamps with the milliseconds after a colon, exception lines that are not
`…Error: msg`, module tags and parallel-layout wordings as families, and the fallback reading past blocks
whose wording names no area."""

from __future__ import annotations

import pytest

from msdoctor.facts.logfamily import classify, families, parse
from msdoctor.facts.logformats import parse_line, parse_ts, strip_prefix_info, strip_prefixes
from msdoctor.facts.logscan import scan_file
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("raw", "text", "level", "rank"),
    [
        # MindIE 2.2 (gpustack#3551): [ts] [pid] [tid] [module] [LEVEL] [file:line] msg
        ("[2025-11-25 17:59:09.908267] [240] [245] [llm] [ERROR] [executor.cpp:646] Invalid DP number per node: 0",
         "Invalid DP number per node: 0", "ERROR", None),
        # MindIE server: a `: ` after the source, the level in brackets after pid/tid/component
        ("[2025-06-12 08:08:24.544+00:00] [12646] [12648] [server] [ERROR] [endpoint.cpp:45] : [MIE04E02011C] x",
         "[MIE04E02011C] x", "ERROR", None),
        # ATB (gpustack#2021): lower-case level, a thread id before the source
        ("[2025-05-13 02:25:58.64217] [error] [36815] [hccl_runner.cpp:132] HcclCommInitRootInfo fail, error:2",
         "HcclCommInitRootInfo fail, error:2", "ERROR", None),
        # DeepSpeed: the source with its function keeps the rest of the message intact
        ("[2024-07-10 15:50:45,798] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW!",
         "[deepspeed] OVERFLOW!", "INFO", None),
        # glog with and without the year
        ("E20251208 11:52:44.736321 69197 npu_word_embedding_impl.cpp:96] node.operation is null",
         "node.operation is null", "ERROR", None),
        ("W0606 10:00:00.123456 12345 file.cc:123] slow", "slow", "WARNING", None),
        # c10 after a torchrun rank prefix; older torch without the date
        ("[rank3]:[W1031 21:35:04.838006795 compiler_depend.ts:57] Warning: EZ9999: Inner Error!",
         "Warning: EZ9999: Inner Error!", "WARNING", 3),
        ("[E OpParamMaker.cpp:273] call aclnnCast failed, detail:EZ9999: Inner Error!",
         "call aclnnCast failed, detail:EZ9999: Inner Error!", "ERROR", None),
        # vLLM under Ray with a rank, new and old forms; an indented message is a frame, not an error
        ("(VllmWorker rank=1 pid=7226) ERROR 09-03 03:02:37 [multiproc_executor.py:522] RuntimeError: x",
         "RuntimeError: x", "ERROR", None),
        ("(VllmWorker rank=1 pid=7226) ERROR 09-03 03:02:37 [multiproc_executor.py:522]     pg.recv()",
         "pg.recv()", None, None),
        ("ERROR 05-15 11:58:24 engine.py:448] boom", "boom", "ERROR", None),
        # LLaMA-Factory / transformers loggers, docker compose, markdown backticks, CRITICAL [logger]
        ("[INFO|2025-06-06 08:49:03] llamafactory.model.loader:157 >> all params", "all params", "INFO", None),
        ("[INFO|tokenization_utils_base.py:2044] 2024-05-10 02:40:30,665 >> loading file", "loading file", "INFO", None),
        ("05/17/2024 01:30:26 - WARNING - llmtuner.model.utils.checkpointing - old GC format",
         "old GC format", "WARNING", None),
        ("vllm-1  | ERROR 10-15 16:32:16 [core.py:708] EngineCore failed", "EngineCore failed", "ERROR", None),
        ("`RuntimeError: NPU out of memory.`", "RuntimeError: NPU out of memory.", None, None),
        ("CRITICAL [vllm] engine dead", "engine dead", "CRITICAL", None),
        # Python logging's `name - LEVEL - ` after an ISO stamp with a zone (GPUStack; gpustack-3969), and
        # without the name; ONNX Runtime's logger (onnxruntime-18807); Paddle Lite's (paddle-lite-9855)
        ("2025-12-20 04:38:00.262558+08:00 - gpustack.worker.serve_manager - ERROR - Error provisioning model "
         "instance Qwen3-nntL6: Failed to get vLLM backend image",
         "Error provisioning model instance Qwen3-nntL6: Failed to get vLLM backend image", "ERROR", None),
        ("2024-05-01 10:00:00,123 - WARNING - slow", "slow", "WARNING", None),
        ("2023-12-13 20:11:34.351330063 [E:onnxruntime:Default, cann_call.cc:139 CannCall] CANN failure 500001: "
         "ACL_ERROR_FAILURE ; NPU=0", "CANN failure 500001: ACL_ERROR_FAILURE ; NPU=0", "ERROR", None),
        ("[F 12/20  9:56:17.932 ...e-v2.11/lite/kernels/nnadapter/engine.cc:294 Engine] Check failed: "
         "(device_names.size() > 0): 0!>0 No device specified.",
         "Check failed: (device_names.size() > 0): 0!>0 No device specified.", "CRITICAL", None),
        # TensorFlow's C++ logger, with its time stamp, a Windows build path, or alone (tensorflow-16860, round 68 i)
        ("2019-11-13 18:56:18.908538: E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: "
         "CUDA_ERROR_NO_DEVICE", "failed call to cuInit: CUDA_ERROR_NO_DEVICE", "ERROR", None),
        ("2018-02-08 18:14:25.441350: I C:\\tf_jenkins\\workspace\\rel-win\\M\\windows-gpu\\PY\\36\\tensorflow\\stream_"
         "executor\\cuda\\cuda_diagnostics.cc:158] retrieving CUDA diagnostic information for host: Vincent",
         "retrieving CUDA diagnostic information for host: Vincent", "INFO", None),
        ("W tensorflow/core/common_runtime/bfc_allocator.cc:275] Allocator ran out of memory",
         "Allocator ran out of memory", "WARNING", None),
        # Ray's de-duplication note after a repeated worker line
        ("(MegatronTrainRayActor pid=3848117) RuntimeError: x [repeated 7x across cluster]", "RuntimeError: x", None, None),
    ],
)
def test_prefix_says_text_level_and_rank(raw, text, level, rank):
    p = strip_prefix_info(raw)
    assert (p.text, p.level, p.rank) == (text, level, rank)
    assert strip_prefixes(raw) == (text, rank)


def test_time_stamp_with_milliseconds_after_a_colon():
    assert parse_ts("2025-01-01-20:10:17:012.780") == parse_ts("2025-01-01-20:10:17.012.780") is not None
    rec = parse_line("[ERROR] HCCL(1234,python):2025-01-01-20:10:17:012.780 [op_base.cc:1][1]errNo[0x5] failed")
    assert rec.grammar == "plog" and rec.module == "HCCL" and rec.time == parse_ts("2025-01-01-20:10:17.012.780")


def test_cann_header_time_is_read_from_the_line(tmp_path, spec):
    """`EZ9999: [PID: N] 2025-…` and `EL9999[PID: N] 2026-…` carry their own time: they sort by it."""
    f = tmp_path / "x.log"
    f.write_text("[ERROR] 2026-04-17-11:29:42 (PID:7136, Device:6, RankID:54) ERR00100 PTA call acl api failed\n"
                 "EL9999[PID: 7136] 2026-04-17-11:29:42.001.734 (EL9999):  [drv api] halDeviceEnableP2P failed\n",
                 encoding="utf-8")  # fmt: skip
    res = scan_file(str(f), spec)
    ev = [e for e in res["first_events"] if "EL9999" in e["text"]]
    assert ev and ev[0]["time"] == parse_ts("2026-04-17-11:29:42.001.734")


@pytest.mark.parametrize(
    ("line", "exc", "msg"),
    [
        ("pyarrow.lib.ArrowInvalid: JSON parse error: Missing a name for object member.", "pyarrow.lib.ArrowInvalid",
         "JSON parse error: Missing a name for object member."),
        ("AssertionError", "AssertionError", ""),
        ("KeyError: 'model.layers.0.self_attn.q_proj.weight'", "KeyError", "'model.layers.0.self_attn.q_proj.weight'"),
        # Ray re-raises a task's exception with the wrapped class in parentheses (verl-omni#402)
        ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::TaskRunner.run() (pid=98005)",
         "ray.exceptions.RayTaskError(OutOfMemoryError)", "ray::TaskRunner.run() (pid=98005)"),
    ],
)
def test_exception_lines(line, exc, msg):
    rec = parse_line(line)
    assert (rec.grammar, rec.exc_type, rec.message) == ("python-exc", exc, msg)


def test_plain_words_are_not_exceptions():
    assert parse_line("Error").grammar == "plain"
    assert parse_line("the loader reported an Error").grammar == "plain"


def test_glog_only_file_is_a_log_and_its_error_lines_are_errors(tmp_path, spec):
    f = tmp_path / "xllm.log"
    f.write_text("I20251208 11:52:33.906306 69771 hf_model_loader.cpp:65] Loading model weights\n"
                 "E20251208 11:52:44.736321 69197 npu_word_embedding_impl.cpp:96] node.operation is null\n",
                 encoding="utf-8")  # fmt: skip
    res = scan_file(str(f), spec)
    assert res["recognised"] > 0
    assert [e["text"] for e in res["first_events"] if e["role"] == "unclassified"] == [
        "node.operation is null"]


def test_mindie_only_file_gets_a_verdict(tmp_path):
    f = tmp_path / "mindie.log"
    f.write_text("[2025-11-25 17:59:09.908267] [240] [245] [llm] [ERROR] [executor.cpp:646] Invalid DP number per node: 0\n"
                 "terminate called after throwing an instance of 'std::out_of_range'\n", encoding="utf-8")  # fmt: skip
    r = run_cli("logs", str(f), "--json")
    assert r.rc in (0, 1), r.err
    rc = r.json()["root_cause"]
    assert rc["rule"] == "PAR042" and "0" in rc["message"], rc


def test_a_guess_of_an_unreliable_area_stays_beside_an_unrecognised_error(tmp_path):
    """The keyword fallbacks of MEM, PAR, NUM and RT headed the verdict right 4 times in 12 on blind real logs: they
    are info, shown as the guess in the unrecognised error's reason, never the headline (ENV099/COMM099 still head)."""
    f = tmp_path / "mindie.log"
    f.write_text("[2025-11-25 17:59:09.908267] [240] [245] [llm] [ERROR] [executor.cpp:646] Invalid TP number per node: 0\n"
                 "terminate called after throwing an instance of 'std::out_of_range'\n", encoding="utf-8")  # fmt: skip
    d = run_cli("logs", str(f), "--json").json()
    rc = d["root_cause"]
    assert rc["rule"] is None and rc["verdict"] == "unrecognised-error", rc
    assert "Invalid TP number per node: 0" in rc["reason"] and "a guess, PAR099" in rc["reason"], rc["reason"]
    assert {(x["rule"], x["severity"]) for x in d["findings"]} >= {("PAR099", "info")}
    f.write_text("[ERROR] 2025-11-25 17:59:09 Failed to load the libhccl_plugin.so dynamic library. Check the "
                 "environment configuration dependency.\n", encoding="utf-8")  # fmt: skip
    rc = run_cli("logs", str(f), "--json").json()["root_cause"]
    assert rc["rule"] == "ENV099" and rc["classified_by"] == "wording", rc


def test_families_extra_keywords_and_modules_are_read():
    fam = families()
    par = next(f for f in fam.areas if f.area == "PAR")
    assert any("dp|tp|pp" in p for _rx, p, _w in par.keywords)
    assert fam.modules["HCCL"] == ("COMM", 3.0)
    c = classify(["[ERROR] HCCL(36035,x):2025-05-13-02:25:58.068.817 [op_base.cc:974][36818][Init]errNo[0x05] failed."])
    assert c is not None and c.area == "COMM" and "[HCCL]" in c.keywords
    c = classify(["RuntimeError: Ascend Transfer Engine initialization failed."])
    assert c is not None and c.area == "COMM"


def test_families_reject_unknown_areas():
    base = {"min_score": 3, "margin": 2, "areas": {"MEM": {"keywords": [["oom", 3]]}}}
    with pytest.raises(ValueError, match="extra"):
        parse({**base, "extra": {"XYZ": {"keywords": []}}})
    with pytest.raises(ValueError, match="unknown area"):
        parse({**base, "modules": {"HCCL": ["XYZ", 3]}})


def test_a_prefix_path_is_no_evidence():
    """`[hccl_runner.cpp:132]` in a MindIE prefix is where the line was written, not what it says."""
    assert classify(["[2025-05-13 02:25:58.64217] [error] [36815] [hccl_runner.cpp:132] fail, error:2"]) is None


def test_fallback_reads_past_a_block_that_names_no_area(tmp_path):
    f = tmp_path / "x.log"
    f.write_text("RuntimeError: the worker failed.\n"
                 "some output\nmore output\nmore output\n"
                 "[2025-11-25 17:59:09.908267] [240] [llm] [ERROR] Failed to load the libhccl_plugin.so dynamic library.\n",
                 encoding="utf-8")  # fmt: skip
    rc = run_cli("logs", str(f), "--json").json()["root_cause"]
    assert rc["rule"] == "ENV099"


@pytest.mark.parametrize("engine", ["python", "auto"])
def test_an_echo_line_is_not_classified_by_the_operator_it_names(tmp_path, engine):
    """torch_npu's `The Inner error is reported as above … operator name is MatMul` (NUM019, info) only echoes an
    error printed above it. Alone, its operator's name is no evidence of a sharding fault: the keyword fallback
    said PAR099 by `MatMul`. It does not read an echo; the word statistics may still guess (an info finding)."""
    f = tmp_path / "x.log"
    f.write_text("Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n"
                 "RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the "
                 "current working operator name is MatMul.\n", encoding="utf-8")  # fmt: skip
    d = run_cli("logs", str(f), "--json", "--engine", engine).json()
    rules = {x["rule"]: x["severity"] for x in d["findings"]}
    assert "NUM019" in rules and not any(r.endswith("099") for r in rules), rules
    assert (d["root_cause"] or {}).get("rule") in (None, "") or not d["root_cause"]["rule"].endswith("099")


def test_a_consequence_headline_does_not_silence_the_error_no_rule_knows(tmp_path):
    """torch_npu's `ERR02200 DIST call hccl api failed` only says a collective failed (a consequence); the
    error of another area no rule knows, read by its wording, heads the verdict; the consequence stays a finding."""
    f = tmp_path / "x.log"
    f.write_text("[ERROR] 2025-10-29-02:17:03 (PID:144556, Device:0, RankID:0) ERR02200 DIST call hccl api failed.\n"
                 "RuntimeError: Failed to load the libhccl_plugin.so dynamic library.\n", encoding="utf-8")  # fmt: skip
    d = run_cli("logs", str(f), "--json").json()
    heads = {x["rule"]: x for x in d["findings"]}
    cons = [r for r, x in heads.items() if r.startswith("COMM") and r != "COMM099"]
    if not cons:  # no consequence rule reads that line in this catalogue: nothing to test here
        pytest.skip("no COMM consequence rule for ERR02200")
    assert d["root_cause"]["rule"] == "ENV099", d["root_cause"]


def test_a_root_warning_keeps_the_headline(tmp_path):
    """CKPT003 (parameters not loaded) is a root cause: an error of another area after it may follow from it."""
    f = tmp_path / "x.log"
    f.write_text("[WARNING] ME(10485:140405902093184,MainProcess):2026-11-29-19:45:18.293.000 [mindspore/train/"
                 "serialization.py:1858] For 'load_param_into_net', 2 parameters in the 'net' are not loaded, because "
                 "they are not in the 'parameter_dict', please check whether the network structure is consistent "
                 "when training and loading checkpoint.\n"
                 "RuntimeError: Failed to load the libhccl_plugin.so dynamic library.\n", encoding="utf-8")  # fmt: skip
    d = run_cli("logs", str(f), "--json").json()
    assert d["root_cause"]["rule"] == "CKPT003", d["root_cause"]


def test_headline_values_come_from_any_line_of_the_rule(tmp_path):
    """vllm-ascend#405: the EJ0003 header names no port; a later line of the same failure does."""
    f = tmp_path / "x.log"
    f.write_text("[rank0]: EJ0003: [PID: 159] 2025-03-26-17:01:02.816.428 Failed to bind the IP port. Reason: The IP "
                 "address and port have been bound already.\n"
                 "[rank0]:         TraceBack (most recent call last):\n"
                 "[rank0]:         host nic listen start failed, port[60000], return[11][FUNC:StartListenSocket]"
                 "[FILE:network_manager.cc][LINE:1163]\n", encoding="utf-8")  # fmt: skip
    rc = run_cli("logs", str(f), "--json").json()["root_cause"]
    assert rc["rule"].startswith("COMM") and "60000" in rc["message"], rc


def test_cpp_abort_is_an_exception_line():
    rec = parse_line("terminate called after throwing an instance of 'std::out_of_range'")
    assert (rec.grammar, rec.exc_type, rec.is_error) == ("python-exc", "std::out_of_range", True)


def test_megatron_dataset_prefix_names_data():
    c = classify(["AssertionError: alpaca_text_document not exists"])  # MindSpeed-LLM FAQ
    assert c is not None and c.area == "DATA"


def test_traceback_frames_tip_a_message_with_few_words(tmp_path):
    """Where the exception was raised counts (at most 2.0, below the minimum score): a frame in
    torch/distributed tips `timed out` (COMM 1.0) over the minimum; the launcher's elastic frames do not."""
    body = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 346, in wrapper\n'
            "    return f(*args, **kwargs)\n"
            '  File "{inner}", line 2501, in all_reduce\n'
            "    work = group.allreduce([tensor], opts)\n"
            "RuntimeError: timed out while waiting for the peer\n")  # fmt: skip
    f = tmp_path / "a.log"
    f.write_text(body.format(inner="/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py"), encoding="utf-8")
    rc = run_cli("logs", str(f), "--json").json()["root_cause"]
    assert rc["rule"] == "COMM099", rc
    g = tmp_path / "b.log"
    g.write_text(body.format(inner="/work/train.py"), encoding="utf-8")
    rc = run_cli("logs", str(g), "--json").json()["root_cause"]
    assert rc.get("rule") is None, rc


def test_frames_data_is_bounded():
    fam = families()
    assert fam.frames and all(w <= 2.0 for _rx, _a, w in fam.frames)
    with pytest.raises(ValueError, match="frames"):
        parse({"min_score": 3, "margin": 2, "areas": {"MEM": {"keywords": [["oom", 3]]}},
               "frames": {"paths": [["x/", "MEM", 3.0]]}})


def test_ray_wrapped_exception_is_an_error_line_in_both_engines(tmp_path, spec):
    """`RayTaskError(KeyError): …` passes the Python pre-filter and grep's, and is read as an exception (Ray's
    `RayTaskError(OutOfMemoryError)` is MEM017's own line)."""
    import re as _re

    from msdoctor.facts.loggrep import GENERIC_ERE

    line = "ray.exceptions.RayTaskError(KeyError): ray::TaskRunner.run() (pid=98005)"
    assert any(_re.search(p, line) for p in GENERIC_ERE)
    f = tmp_path / "ray.log"
    f.write_text(line + "\n", encoding="utf-8")
    res = scan_file(str(f), spec)
    assert [e["exc_type"] for e in res["first_events"] if e["role"] == "unclassified"] == [
        "ray.exceptions.RayTaskError(KeyError)"]
