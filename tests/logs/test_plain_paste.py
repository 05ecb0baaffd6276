"""A pasted excerpt in no known log grammar (one bare line from an issue or a FAQ) is still read: its lines with
error words are errors, so rules and the wording fallback see them. A text without any stays exit 2.
Lines copied exactly from tests/realworld/logs/<case>/ (named beside each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor.checks.logs import unclassified_events
from msdoctor.errors import InputError
from msdoctor.facts.logs import collect
from msdoctor.wordinggen import stripped_catalogue
from tests.conftest import run_cli

# verl-doc-faq-torch-npu-detected-npu-not-available-2026
BARE = "torch_npu detected, but NPU device is not available or visible"
# mindspore-faq-nccl-connect-network-unreachable-socket-ifname-2022
NCCL_WARN = "include/socket.h:403 NCCL WARN Connect to XXX failed: Network is unreachable"
# mindspore-faq-cpu-pc-device-target-ascend-pointer-session-null-2022: MindSpore's null-pointer check, no other word
NULL_POINTER = "the pointer[session] is null"
# mindspeed-faq-torch-extensions-stale-lock-hang-2024: no error word
NO_ERROR = "Using ~/.cache/torch_extensions/py38_cpu as PyTorch extensions root..."


# The wider error vocabulary of a bare message (each line the whole paste of its case; no older error word in it)
WIDER = [
    "npu is busy, check again",  # mindcluster-doc-npu-is-busy-check-again-2025
    "MD5 does not match",  # mindspore-faq-source-build-md5-does-not-match-interrupted-third-party-download-2022
    "HCCL dependent tsd is not open",  # mindspore-faq-ps-worker-server-same-card-hccl-tsd-not-open-2021
    "Unsupport data type: at::ScalarType::Double.",  # mindstudio-doc-migration-unsupport-data-type-double-2023
    # mindx-caselib-volcano-pending-annotations-not-same-node-idle-2023
    "all nodes are unavailable: 1 node annotations(7) not same node idle(8)",
    # mindspeed-llm-faq-num-layers-divisible-pipeline-parallel-2025
    "number of layers should be divisible by the pipeline parallel size",
    "wrong shape of image",  # mindspore-faq-predict-wrong-shape-of-image-mnist-grayscale-2021
    # huawei-support-atlas300-ascend310-nvme-4kb-alignment-2021
    "dev id 0, The address does not comply with the NVMe protocol(must be aligned with 4KB).",
    # modelarts-ascend-vllm-faq-ray-cgraph-get-timeout-multinode-2025: `timeout` after an underscore
    "If the execution is expected to take a long time, increase RAY_CGRAPH_get_timeout which is currently 10 seconds.",
    "The wait execution of the Notify register times out.",  # cann-doc-notify-register-wait-times-out-2022
    "npuDeviceID does not allow repetitive element",  # mindie-notes-npudeviceids-size-not-equal-worldsize-2025
    # mindspore-faq-auto-parallel-np-tensor-can-not-be-split-by-strategy-2022
    "np_tensor can not be split by strategy!",
    "Stream isn't enough",  # mindspore-faq-stream-isnt-enough-ascend-stream-limit-2024
    "selfRef expected dtype is DT_INT32 but found DT_BFLOAT16.",  # vllm-ascend-1883-selfref-expected-dtype-int32-bf16-2025
    # vllm-ascend-7711-pd-hccn-conf-not-mounted-device-ip-not-set-2026
    "[RanktablCheck] 'device ip' is not set correctly, must be set when multi Server or HCCL INTRA ROCE ENABLE enabled",
    # round 55: what a thing lacks, said as a statement
    "this channel doesn't have taskID 8845!, Channel id 0",  # cann-doc-vpc-get-result-channel-doesnt-have-taskid-illegal-param-2025
    "No suitable workers.",  # gpustack-1128-vllm-backend-amd64-only-label-selector-910b1-arm64-2025
    # agentsdk-aura-faq-vc-task-index-host-index-not-configured-2026
    'You should exec "export VC_TASK_INDEX={0|1|2...}" to configure the host index',
    # fast-reid-202-some-model-parameters-not-in-checkpoint-2020 (its log's line without fastreid's logger prefix)
    "Some model parameters are not in the checkpoint:",
    # vllm-ascend-7570-qwen35-397b-w8a8-mtp-fullgraph-title-mte-ddr-out-of-range-2026: an issue title quoting it
    "[Bug][Qwen3.5][FullGraph]: The DDR address of the MTE instruction is out of range",
    # round 57: Python's TypeError of a call that does not fit the callee, quoted in a title without an error word
    # (ms-swift-8290-vllm-ascend-infer-torch-npu-mem-get-info-got-multiple-values-for-argument-device-2026)
    "torch.npu.mem_get_info 出现 got multiple values for argument 'device' 错误",
    # round 58: issue titles that state the failure without an English error word: a tracker's type tag, Chinese
    # words of a failure before the message or ending the statement, 报 before what failed, an exception's name
    # ending the line, Python's and a crash's wording without `has` / `Segmentation fault`
    "910B环境安装使用Paddle报NpuAclnnOpRunner: aclnnInplaceFillScalar",  # paddle-73990-910b-cann81-run-check-…
    "libascendcl.so: 运行华为华为昇腾推理报错",  # fastdeploy-1808-atlas300i-yolov5-paddle-lite-libascendcl-so-title-2023
    "Eval bug: llama.cpp+CANN工作不正常",  # hipudding-llamacpp-9-310i-duo-llama-server-slow-operator-performance-…
    # triton-ascend-328-ttfhw-torch-npu-2-7-1-undefined-symbol-msprofsyscycletime-cann9-2026
    "【TTFHW】 quick_start文档中torch-npu版本2.7.1与推荐CANN版本不匹配",
    "【NPU】ascend 310 遇到MemoryError",  # paddle-34802-npu-build-ascend310-memoryerror-run-check-ok-2021
    "Question:Ascend opp_kernels is not installed?",  # mindspeed-llm-2-mindspore-271-cann-83rc2-ascend-opp-kernels-…
    # tilelang-mlir-ascend-100-npuir-mlir-pass-pipeline-run-segfault-valid-vector-kernel-…
    "[NPU] MLIR pass pipeline (Pipeline.run) segfaults on a valid NPU vector kernel — near-identical kernel compiles fine",
    # round 59: the statement ending in what failed: an operator not supported, slowness
    "310P上图模式运行InternVL2 8B提示算子不支持",  # dlinfer-221-310p-graph-mode-internvl2-atbgraph-compile-op-unsupported-2025
    "vllm-ascend 0.11.0 glm-4.5v on 910b4 推理缓慢",  # vllm-ascend-4120-… (the title without its [Performance] tag)
    # round 68: a C assertion macro's report (llamacpp-1813-gpt4all-ggml-assert-ctx-mem-buffer-not-null-1-9gb-ram-2023)
    "GGML_ASSERT: /home/circleci/project/gpt4all-backend/llama.cpp-230511/ggml.c:4411: ctx->mem_buffer != NULL",
]


@pytest.mark.parametrize("line", [BARE, NCCL_WARN, NULL_POINTER, *WIDER])
def test_a_bare_error_line_is_read_when_no_rule_knows_it(tmp_path: Path, line: str) -> None:
    f = tmp_path / "paste.txt"
    f.write_text(line + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], stripped_catalogue())  # no rule at all: only the paste reading can find the error
    assert [e["text"] for e in unclassified_events(facts)] == [line]


# An issue title behind its tracker's tag: read as an error (the tag stripped like any prefix), whatever its words
TITLES = [
    # sglang-12835-npu-qwen3next-no-sglang-implementation-get-model-architecture-2025
    ("[Bug] Qwen3NextForCausalLM has no SGlang implementation", "Qwen3NextForCausalLM has no SGlang implementation"),
    # vllm-ascend-6578-910b-a-x-v0140rc1-qwen3-32b-qknorm-rope-fusion-no-attribute-qkv-rmsnorm-rope-2026
    ("[Bug]: 910B A+X 基于v0.14.0 vllm-ascend运行Qwen3-32B模型出现 no attribute qkv_rmsnorm_rope",
     "910B A+X 基于v0.14.0 vllm-ascend运行Qwen3-32B模型出现 no attribute qkv_rmsnorm_rope"),
    # vllm-ascend-1154-external-launcher-dp-assert-cpu-group-not-none-2025
    ("[Bug]: external_launcher下无法感知data_parallel_size 导致cpu_group计算异常 assert self.cpu_group is not None",
     "external_launcher下无法感知data_parallel_size 导致cpu_group计算异常 assert self.cpu_group is not None"),
    # the tag alone makes it one (vllm-ascend-4120-v0110-glm45v-4x910b4-inference-slow-vs-h20-2025: no error word)
    ("[Performance]: vllm-ascend 0.11.0 glm-4.5v on 910b4 推理缓慢", "vllm-ascend 0.11.0 glm-4.5v on 910b4 推理缓慢"),
]


@pytest.mark.parametrize(("line", "read"), TITLES)
def test_an_issue_title_is_read_as_the_error(tmp_path: Path, line: str, read: str) -> None:
    f = tmp_path / "title.log"
    f.write_text(line + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], stripped_catalogue())
    texts = [e["text"] for e in unclassified_events(facts)]
    assert len(texts) == 1 and texts[0].endswith(read)  # with or without the tag (`[Bug]` is a prefix the reader strips)


# Prose that only announces the error below it, and a tag that is not a fault report: no error of their own
NOT_ERRORS = ["报错信息如下：", "[Feature]: support Qwen3-Next on 910B"]
# A pasted command line's option names are no error words (nccl-2169-4-h100-alltoall-perf-throughput-drops-above-512mb-
# nccl-2.30.4-2026: its first line, alone, was read as a COMM fault for `--timeout`); the others are made up around
# the same forms (a prompt, assignments, an interpreter)
COMMANDS = [
    "mpirun -np 4 -x LD_LIBRARY_PATH -x NCCL_ALGO=Ring -x NCCL_DEBUG=INFO -x NCCL_DEBUG_FILE=ncclDebug.%h.%p "
    "-x NCCL_TOPO_DUMP_FILE=ncclSystem.txt -x NCCL_PROTO=Simple --timeout 20 ./build/alltoall_perf -b 500M -e 524M "
    "-g 1 -n 10 -w 1 -R1",
    "python train.py --data_path /x --timeout 30 --error_log e.txt",
    "(base) root@host:~/x# CUDA_VISIBLE_DEVICES=0 python demo.py --fail-fast",
]
# ... but a command's own message, or a line that says the command failed, is an error
COMMAND_ERRORS = [
    "torchrun: error: the following arguments are required: --nproc_per_node",
    "python: can't open file 'x.py': [Errno 2] No such file or directory",
    "bash: mpirun: command not found",
    "sh run_distribute.sh failed",
]


@pytest.mark.parametrize("line", [*NOT_ERRORS, *COMMANDS])
def test_an_announcement_a_feature_request_or_a_command_line_is_not_an_error(tmp_path: Path, line: str) -> None:
    f = tmp_path / "paste.txt"
    f.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="none holds a line of a known log grammar"):
        collect([str(f)], stripped_catalogue())


def test_a_text_without_error_words_is_still_not_a_log(tmp_path: Path) -> None:
    f = tmp_path / "paste.txt"
    f.write_text(NO_ERROR + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="none holds a line of a known log grammar"):
        collect([str(f)], stripped_catalogue())
    r = run_cli("logs", str(f))
    assert r.rc == 2 and "known log grammar" in r.err


@pytest.mark.parametrize("line", COMMAND_ERRORS)
def test_a_commands_own_error_is_still_read(tmp_path: Path, line: str) -> None:
    f = tmp_path / "paste.log"
    f.write_text(line + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], stripped_catalogue())
    assert [e["text"] for e in unclassified_events(facts)] == [line]


def test_a_known_grammars_line_is_an_error_by_its_level_only(tmp_path: Path) -> None:
    """In a log of a known grammar a line of that grammar is an error by its level, never by a word of its message:
    the INFO line's `failed` is no error. (The bare line beside it is, where the log holds no error of its own:
    tests/logs/test_mixed_paste.py.)"""
    f = tmp_path / "worker_0.log"
    f.write_text("[INFO] ME(1,ffff,python):2024-01-01-00:00:00.000.000 [train.py:1] epoch 1 failed samples: 0\n"
                 + BARE + "\n", encoding="utf-8")  # fmt: skip
    facts, _ = collect([str(f)], stripped_catalogue())
    assert [e["text"] for e in unclassified_events(facts)] == [BARE]


def test_cli_reads_the_bare_line(tmp_path: Path) -> None:
    f = tmp_path / "paste.txt"
    f.write_text(BARE + "\n", encoding="utf-8")
    r = run_cli("logs", str(f))
    assert r.rc == 1 and "not available or visible" in r.out, (r.out, r.err)


# Lines whose error hides behind what a paste or a tool put in front (or an unspaced colon): each is read as the
# exception it is, with the prefix gone. The first line of each pair is copied from the case named beside it.
PREFIXED = [
    # mindspore-doc-mindrt-op-compile-response-is-empty-2023: pytest's report of a failed test
    ("E       RuntimeError: Response is empty", "RuntimeError: Response is empty"),
    # vllm-ascend-2882-torchair-op-converter-not-implemented-moe-token-unpermute-2025: vLLM's logger, level cut off
    ("[multiproc_executor.py:654] RuntimeError: Ascend op converter is not implemented of: npu.npu_moe_token_unpermute.default",
     "RuntimeError: Ascend op converter is not implemented of: npu.npu_moe_token_unpermute.default"),
    # comfyui-6483-ascend-npu-cuda-branch-torch-not-compiled-cuda-2025: ComfyUI's failed-node report
    ("!!! Exception during processing !!! Torch not compiled with CUDA enabled", "Torch not compiled with CUDA enabled"),
    # glm-v-130-glm45v-vision-heads-12-not-divisible-by-tp8-910b3-2025: quoted inside a Chinese sentence
    ("8卡910B3，vllm-ascend v0.10.2rc1镜像部署GLM4.5V报错“AssertionError: 12 is not divisible by 8”，为啥卡数需要能被12整除？？",
     'AssertionError: 12 is not divisible by 8"，为啥卡数需要能被12整除？？'),
    # mindspeed-core-ms-faq-libsndfile-cannot-load-library-2025: no space after the class's colon
    # mindformers-faq-hccl-tools-socket-gaierror-hostname-in-docker-2024: the standard library's lower-case class
    ("socket.gaierror: [Errno -2] Name or service not known", "socket.gaierror: [Errno -2] Name or service not known"),
    # mindspore-matmul-grad-sens-blog-2022: after Chinese prose and an ASCII colon (the quotes read as ASCII)
    ("报错信息:ValueError: For ‘MatMul’, the input dimensions must be equal, but got ‘x1_col’: 2 and ‘x2_row’: 1. And ‘x’ shape 2, 3, ‘y’ shape 1, 3.",
     "ValueError: For 'MatMul', the input dimensions must be equal, but got 'x1_col': 2 and 'x2_row': 1. And 'x' shape 2, 3, 'y' shape 1, 3."),
    # mindone-293-pangu-draw-v3-no-module-named-te-flashattention-2024: inside backticks after Chinese prose
    ("我去掉了try逻辑，报错 `ModuleNotFoundError: No module named 'te'`", "ModuleNotFoundError: No module named 'te'`"),
    # onnxruntime-18807-cann-failure-500001-aclopcompileandexecute-conv-ascend310-2023: ONNX Runtime's logger at level E
    ("2023-12-13 20:11:34.351330063 [E:onnxruntime:Default, cann_call.cc:139 CannCall] CANN failure 500001: ACL_ERROR_FAILURE ; NPU=0 ; hostname=ecs-b520 ; expr=aclopCompileAndExecute(opname.c_str(), prepar",
     "CANN failure 500001: ACL_ERROR_FAILURE ; NPU=0 ; hostname=ecs-b520 ; expr=aclopCompileAndExecute(opname.c_str(), prepar"),
    # paddle-lite-9855-nnadapter-no-device-specified-python-2.11-a200dk-2022: Paddle Lite's logger at level F
    ("[F 12/20  9:56:17.932 ...e-v2.11/lite/kernels/nnadapter/engine.cc:294 Engine] Check failed: (device_names.size() > 0): 0!>0 No device specified.",
     "Check failed: (device_names.size() > 0): 0!>0 No device specified."),
    # vllm-ascend-12907-qwen36-w8a8-fp16-quantmatmul-scale-dtype-ez1001-2026: a class with its code and no message
    ("AclNN_Parameter_Error(EZ1001):", "AclNN_Parameter_Error(EZ1001):"),
    ("OSError:cannot load library 'libsndfile.so':libsndfile.so: cannot open sharedobject file: No such file or directory",
     "OSError: cannot load library 'libsndfile.so':libsndfile.so: cannot open sharedobject file: No such file or directory"),
]


@pytest.mark.parametrize("engine", ["python", "auto"])
@pytest.mark.parametrize(("line", "read"), PREFIXED)
def test_an_error_behind_a_prefix_is_read(tmp_path: Path, line: str, read: str, engine: str) -> None:
    f = tmp_path / "paste.txt"
    f.write_text("some context\n" + line + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], stripped_catalogue(), engine=engine)
    assert [e["text"] for e in unclassified_events(facts)] == [read]
