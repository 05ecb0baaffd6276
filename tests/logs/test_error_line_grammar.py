"""What the scanner reads as an ERROR LINE for the fallback (X099) and the word guess (X097): forms of real pasted
errors that no error-line test knew, so that with no rule for them a paste had no error block at all (round 48:
174 of 2149 corpus cases with every signature rule off). Every positive line is copied exactly from the corpus case
named beside it (tests/realworld/logs/); the near misses are lines that must stay no error (INFO / warning lines,
a raise statement's source line, a prose header, CANN's `[FUNC:GetError]`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor import wordinggen as wg
from tests.logs.linear import assert_linear


@pytest.fixture(scope="module")
def stripped():
    return wg.stripped_catalogue()


def _blocks(tmp_path: Path, lines: list[str], cat) -> list[list[str]]:
    case = tmp_path / "case"
    case.mkdir(exist_ok=True)
    (case / "paste.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [b for b, _frames in wg.case_blocks(case, cat)]


# A line of a known grammar beside the error: the paste is read as a log (its error words alone make no error).
PYLOG_INFO = "2025-03-11 14:48:04,123 - INFO - vllm.engine - Initializing an LLM engine"

POSITIVE = [
    # bionemo-recipes-814-…: Slurm's `srun -l` task label before the traceback's exception line
    ("srun-label", [" 0:     raise ValueError(",
                    " 0: ValueError: num_attention_heads (15) must be a multiple of tensor_model_parallel_size (2)."],
     "ValueError: num_attention_heads (15)"),
    # ptoas-781-…: a linker's own `error:` in a build's output (a log of a known grammar: not a paste)
    ("linker-error", [PYLOG_INFO, "ld.lld: error: unable to find library -lnnopbase", "cceld: Linker ReturnCode: 1"],
     "ld.lld: error: unable to find library -lnnopbase"),
    # vllm-ascend-9421-…: a compiler's `fatal error:` after its source position
    ("compiler-fatal-error", [PYLOG_INFO, "/home/floatlibai/qwen3-32b-test/vllm-ascend/csrc/kernels/pos_encoding_kernels."
                              "cpp:22:10: fatal error: 'inner_interface/inner_kernel_operator_intf.h' file not found"],
     "fatal error: 'inner_interface/inner_kernel_operator_intf.h' file not found"),
    # ptoas-781-…: pip's / a script's `ERROR: ` after a bracketed time stamp
    ("stamped-ERROR", [PYLOG_INFO, "[2026-06-09 13:13:59] ERROR: testcase failed (exit 2): colexpandadd"],
     "testcase failed (exit 2): colexpandadd"),
    # vllm-ascend-8110-…: Ray's C++ core log at level E, after Ray's worker prefix
    ("ray-cpp-E", ["(WorkerDict pid=556036) [2026-04-08 14:49:46,095 E 556036 556036] logging.cc:474: *** SIGSEGV "
                   "received at time=1775630986 on cpu 209 ***"],
     "*** SIGSEGV received at time=1775630986 on cpu 209 ***"),
    # vllm-ascend-1038-…: an AscendC kernel's failed assertion
    ("ascendc-assert", [PYLOG_INFO, "[ASSERT] [CANN_VERSION : 8.1.RC1][TimeStamp : 0] /home/slave1/Ascend/8.1.RC1/opp/"
                        "built-in/op_impl/ai_core/tbe/impl/dynamic/../ascendc/gather_v3/gather_v3_base.h:137: Assertion "
                        "`(0 <= val && val < this->gxSize_)' Index 308 out of range[0 308)!"],
     "Assertion `(0 <= val && val < this->gxSize_)'"),
    # fastchat-3237-…: an issue title's `[BUG] ` tag before the exception line
    ("bug-tag", [PYLOG_INFO, "[BUG] RuntimeError: NPU out of memory. Tried to allocate 268.00 MiB"],
     "RuntimeError: NPU out of memory. Tried to allocate 268.00 MiB"),
    # vllm-ascend-10834-…: Chinese prose before torch_npu's own `[ERROR] ` line
    ("cjk-before-ERROR", [PYLOG_INFO, "报错：直接使用已量化的权重，启动模型提示[ERROR] 2026-06-12-08:41:39 (PID:379, Device:0, "
                          "RankID:-1) ERR00100 PTA call acl api failed."],
     "ERR00100 PTA call acl api failed."),
    # a paste of no known grammar: an exception's class as a repr or inside a sentence
    # (agentsdk-aura-faq-verl-checkpointconfig-…, msprobe-faq-megatron-activation-func-…, tf-models-5337-…)
    ("repr-exception", ["TypeError(\"CheckpointConfig.__init__() got an unexpected keyword argument 'strict'\")"],
     "TypeError(\"CheckpointConfig.__init__()"),
    ("repr-exception-bare", ["ValueError(Only support fusion of gelu and swiglu)"], "ValueError(Only support fusion"),
    ("class-in-sentence", ["InvalidArgumentError (see above for traceback): Input to reshape is a tensor with 768 values,"
                           " but the requested shape has 3072"], "InvalidArgumentError (see above for traceback)"),
    # mindie-forum-0201178898375605129-…: `报错Failed …` (after CJK, `\b` is no word boundary)
    ("cjk-then-failed", ["mindie启动服务时,报错Failed to start http wrapper"], "Failed to start http wrapper"),
    # cann-driver-faq-run-install-set-username-…: 失败 followed by the message it quotes
    ("cjk-failed-word", ["- 问题描述：安装run包时失败，报“set username and usergroup, HwHiAiUser:HwHiAiUser”。"], "set username"),
    # modelarts-trouble-13-0074-…: a non-zero exit status
    ("return-code", ["[Modelarts Service Log]Training end with return code: 137"], "return code: 137"),
    # paddle-lite-10106 (round 76 b): a Windows NTSTATUS exit code, a 32-bit number (0xC0000005, access violation)
    ("ntstatus-exit-code", ["Process finished with exit code -1073741819 (0xC0000005)"], "exit code -1073741819"),
    # a linker's, a shell's, a resolver's, a build's, a checkpoint loader's words (fla-npu-323-…, fla-npu-errors-cann-
    # set-env-sh-…, triton-ascend-900-…, ragsdk-faq-faiss-1100-…, anysplat-69-…, cann-docs-venc-create-chn-…)
    ("multiple-definition", ["      OpInterface_7.cpp:(.text+0x0): multiple definition of `op_plugin::npu_chunk_gated_delta"
                             "_rule_fwd_h(at::Tensor const&)'"], "multiple definition of"),
    ("unbound-variable", ["set_env.sh: line 31: CMAKE_PREFIX_PATH: unbound variable"], "unbound variable"),
    ("unsatisfiable", ["  × No solution found when resolving dependencies:"], "No solution found"),
    ("version-required", ["CMake 3.24.0 or higher is required"], "CMake 3.24.0 or higher is required"),
    ("missing-keys", ["Missing keys: ['encoder.aggregator.camera_token', 'encoder.aggregator.register_token']"],
     "Missing keys:"),
    ("err-bang", ["[Venc]:venc_drv_check_resolution [Line]:342 max picture width (0) err! should in [128,4096]!"],
     "max picture width (0) err!"),
    # round 49: a statement of what is wrong without an error word — one-line pastes that were unreadable input
    # (deim-96-…, llamafactory-5627-…, sgl-kernel-npu-544-…, cann-docs-venc-send-frame-h265-…, cann-doc-vpc-create-
    # chn-…, cann-docs-vnpu-vdec-channel-limit-…, easyinfer-vllm-ascend-longcat-…, cann-docs-vpc-buffer-size-…,
    # cann-troubleshooting-310b-vpc-width-…, dqfd-5-…, easyinfer-vllm-kimi-k26-…, paddle-42539-…, vllm-ascend-14506-…,
    # flagtree-537-…, ait-faq-docker-install-curl-60-…, cann-docs-vpc-cvdr-axi-…, cann-docs-vdec-frames-sent-…,
    # ascend-pytorch-51-…)
    ("loss-is-nan", ["Loss is nan, stopping training"], "Loss is nan"),
    ("grad-norm-nan", ["{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 4.549912997495027e-06, 'epoch': 0.66}"],
     "'grad_norm': nan"),
    ("not-support", ["Op MoeDistributeDispatchV2 not support soc version ascend950"], "not support soc version"),
    ("dont-support", ["[Venc]:hevc_check_pixel_format [Line]:1110 H.265 don't support format 5,should be NV12(1) or "
                      "NV21(2)"], "don't support format 5"),
    ("already-created", ["device 0, chn 0 has already been created!"], "already been created"),
    ("is-full", ["pid 0 usr chn 0 device 0 chn 0 vf_id 1 has created chn num(27) is full, max chn num = 27"], "is full"),
    ("too-small", ["HCCL_BUFFSIZE_EP is too SMALL, needed 819MB, have 800MB"], "too SMALL"),
    ("smaller-than", ["buffer size(3110400) is smaller than need buffer size(4147200) when format is 3."],
     "is smaller than need"),
    ("should-be", ["width should be in [10, 32768], width is 654321"], "width should be in"),
    ("must-be", ["    Dimensions must be equal, but are 4 and 2 for DQfD_0/eval_net/l1/MatMul (op:'Matmul') with input "
                 "shapes: [?,4], [2,24]."], "Dimensions must be equal"),
    ("could-not", ["could not locate tool call start/end tokens"], "could not locate"),
    ("missing", ["missing NPU kernel: lookup_table_grad, expected_kernel_key:data_type[float]:data_layout[Undefined("
                 "AnyLayout)]:place[Place(npu:0)]:library_type[PLAIN], fallbacking to CPU"], "missing NPU kernel"),
    ("link-down", ["link status: DOWN"], "DOWN"),
    ("conflict", ["The conflict is caused by:"], "conflict"),
    ("problem", ["curl: (60) SSL certificate problem: self signed certificate in certificate chain"], "problem"),
    ("err-word", ["vpc get err int: vpc_cvdr_axi_rd_resp_err"], "err int"),
    ("oom-word", ["OOM_NOTIFIER: oom type 2"], "oom type 2"),
    ("caution", ["CAUTION: The operator 'aten::_transformer_encoder_layer_fwd' is not currently supported on the NPU "
                 "backend and will fall back to run on the CPU. This may have performance implications. "],
     "CAUTION"),
]  # fmt: skip


@pytest.mark.parametrize("lines, said", [(p[1], p[2]) for p in POSITIVE], ids=[p[0] for p in POSITIVE])
def test_a_real_error_line_makes_an_error_block(tmp_path, stripped, lines, said):
    blocks = _blocks(tmp_path, lines, stripped)
    assert blocks, "no error block"
    assert any(said in line for b in blocks for line in b), blocks


NEAR_MISS = [
    # a raise statement's source line (vllm-ascend-3092-…, after a compose prefix the scanner does not know)
    ("raise-source-line", "vllm-ascend-V  | (APIServer pid=1)     raise ImportError("),
    # CANN's function name in its `[FUNC:…]` tag (mmcv-3131-…) and a class name in a kubectl table (hami-ascend-…-129)
    ("cann-func-tag", "[AIC_INFO] after execute:args print end[FUNC:GetError][FILE:stream.cc][LINE:1502]"),
    ("kubectl-table", "  Warning  UnexpectedAdmissionError  kubelet"),
    # a Chinese prose header before the error it introduces (atc-forum-0254120972588088008-…)
    ("cjk-header", "报错信息:"),
    ("cjk-header-colon", "然后出现如下错误："),
    # exit status 0 is no failure
    ("exit-code-0", "Process finished with exit code 0"),
    # a compiler's warning, an echoed command
    ("compiler-warning", "/app/ggml/src/ggml-cann.cpp:1154:13: warning: unused variable 'x' [-Wunused-variable]"),
    ("echoed-command", "$ grep -n 'error: ' build.log"),
    # a progress line whose loss and norm are numbers, a word that holds `nan` / `err` / `down` inside it
    ("finite-loss", "{'loss': 1.4596, 'grad_norm': 0.83, 'learning_rate': 4.552255167404752e-06, 'epoch': 0.66}"),
    ("words-inside", "Downloading nano-gpt weights into the stderr_dir (shutting down the old server)"),
    # gdb's hint in a pasted backtrace (atb-faq-abi-config-cxx11-regex-compiler-sigabrt-2025)
    ("gdb-debuginfo-hint", "Missing separate debuginfos, use: debuginfo-install glibc-2.17-260.el7.aarch64 zlib-1.2.7-18.el7"
                           ".aarch64"),
]  # fmt: skip


@pytest.mark.parametrize("line", [n[1] for n in NEAR_MISS], ids=[n[0] for n in NEAR_MISS])
def test_a_near_miss_is_no_error_line(tmp_path, stripped, line):
    # beside a real error (the paste is read), the near miss itself opens no block
    err = "RuntimeError: NPU out of memory. Tried to allocate 268.00 MiB"
    blocks = _blocks(tmp_path, [line, "", "", "", err], stripped)
    assert blocks and all(b[0] != line.strip() and line.strip() not in b[0] for b in blocks), blocks


KNOWN_GRAMMAR_NEAR_MISS = [
    # Ray's C++ core log at level I, an srun-labelled INFO / progress line: not errors
    "(WorkerDict pid=556036) [2026-04-08 14:49:46,090 I 556036 556036] core_worker.cc:210: Constructing CoreWorker",
    " 0: [NeMo I 2025-03-01 10:00:00 nemo_logging:393] Experiments will be logged at /results",
    " 3: Epoch 0:  10%|█         | 10/100 [00:05<00:45,  2.00it/s, loss=2.31]",
    "[W730 06:16:22.869118032 compiler_depend.ts:526] Warning: NPU warning, error code is 507018[Error]: ",
]


@pytest.mark.parametrize("line", KNOWN_GRAMMAR_NEAR_MISS)
def test_an_info_or_warning_line_of_a_log_stays_no_error(tmp_path, stripped, line):
    assert _blocks(tmp_path, [PYLOG_INFO, line], stripped) == []


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_both_engines_select_the_new_error_lines(tmp_path, engine):
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.logscan import ScanSpec, scan_file

    sigs = signature_set(load_catalogue())
    spec = ScanSpec(sigs, engine="python") if engine == "python" else ScanSpec(sigs, grep_min_size=0)
    lines = [PYLOG_INFO]
    for _id, ls, _said in POSITIVE[1:7]:
        lines += [x for x in ls if x != PYLOG_INFO]
    log = tmp_path / "build.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = scan_file(str(log), spec)
    assert res.get("engine", "python").startswith(engine)
    text = repr(res)
    for said in ("unable to find library -lnnopbase", "inner_kernel_operator_intf.h' file not found",
                 "testcase failed (exit 2)", "SIGSEGV received", "gather_v3_base.h:137", "NPU out of memory"):
        assert said in text, said


def test_the_new_error_line_forms_are_linear():
    from msdoctor.facts.logformats import strip_prefix_info
    from msdoctor.facts.logstate import PASTE_ERROR_RE, RAISE_OPEN_RE, TOOL_ERROR_RE

    tests = [PASTE_ERROR_RE.search, RAISE_OPEN_RE.search, TOOL_ERROR_RE.match, strip_prefix_info]
    pads = ("a", "A", "1", " ", "报错", "报错a", "Aa", "a:", "raise a", " 0: ", "[2026-04-08 14:49:46,095 E 1 1] ",
            "x.cpp:1:", "[BUG] ", "Error(")
    for f in tests:
        assert_linear(f, pads, f)
