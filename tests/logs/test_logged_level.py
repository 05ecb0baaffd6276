"""A line the program itself logged as a WARNING does not head the verdict over a later error line: an error
rule's match on it becomes a warning finding ("logged at WARNING level"), in both scan engines. An INFO line
keeps its rule's severity (it carries values: `loss: nan` in a progress line). Every line below is copied from
a real log of tests/realworld/logs (the case named beside it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msdoctor.facts.logformats import parse_line, strip_prefix_info
from msdoctor.facts.logstate import line_level
from tests.conftest import run_cli

# mindspore-lite-faq-model-version-1.2-inference-1.5-schedule-kernels-failed-2024 (ENV084's line)
LITE_WARNING = ("WARNING [mindspore/lite/src/lite_model.cc:**] ConstructModel] model version is MindSpore Lite 1.2.0, "
                "inference version is MindSpore Lite 1.5.0 not equal")  # fmt: skip
# a torch_npu OOM of the corpus (MEM rule)
NPU_OOM = ("RuntimeError: NPU out of memory. Tried to allocate 35.31 GiB (NPU 0; 60.97 GiB total capacity; 26.13 GiB "
           "already allocated; 26.13 GiB current active; 33.81 GiB free; 26.61 GiB reserved in total by PyTorch)")  # fmt: skip
# mindrl-144-node-redundant-not-registered-2023 (COMM058 at MindSpore's WARNING level)
MS_WARNING = ("[WARNING] DISTRIBUTED(22503,7f9fd5b43100,python):2023-08-09-10:12:39.824.033 "
              "[mindspore/ccsrc/distributed/cluster/cluster_context.cc:268] PostProcess] This node could be redundant "
              "and is not successfully registered.")  # fmt: skip
# vllm-ascend-641-310p3-hccl-allreduce-ei0003-checkdatatype-bfloat16-2025 (COMM094's line, relayed by torch_npu)
RELAYED_EI0003 = ("[rank0]:[W424 03:40:28.559765110 compiler_depend.ts:432] Warning: EI0003: [PID: 143] "
                  "2025-04-24-03:40:28.975.025 In [CheckDataType], value [bfloat16] for parameter [dataType] is invalid. "
                  "Reason: The collective communication operator has an invalid argument. Reason[bfloat16]")  # fmt: skip
# bevdet-265-fp16-dynamic-loss-scale-loss-nan-2023: a NaN loss in an INFO progress line
INFO_NAN = ("2023-06-15 04:03:40,870 - mmdet - INFO - Epoch [1][50/3862]\tlr: 4.915e-05, eta: 3 days, 22:56:26, time: "
            "4.428, data_time: 1.900, memory: 10657, loss: nan, grad_norm: nan")  # fmt: skip


@pytest.mark.parametrize(
    ("line", "level"),
    [
        (LITE_WARNING, "WARNING"),
        (MS_WARNING, "WARNING"),
        (INFO_NAN, "INFO"),
        (
            "/usr/local/lib/python3.9/site-packages/torch_npu/utils/path_manager.py:79: UserWarning: Warning: The "
            "/usr/local/Ascend/ascend-toolkit/latest owner does not match the current user.",
            "WARNING",
        ),
        ("(RayWorkerWrapper pid=1) WARNING 05-15 11:58:24 [engine.py:448] message", "WARNING"),
        (NPU_OOM, "ERROR"),
        ("[mindspore/lite/src/scheduler.cc:**] Schedule] Schedule graph to kernels failed.", None),
        ("Warning-free text that only starts with the word", None),
        # vllm-ascend-641-310p3-hccl-allreduce-ei0003-checkdatatype-bfloat16-2025: torch_npu relays HCCL's EI0003
        # under a c10 warning print; the E-code says it is an error (RELAYED_CANN_ERROR_RE), with or without the prefix
        (RELAYED_EI0003, None),
        (RELAYED_EI0003.split("] ", 1)[1], None),
        # a warning print of a W-level message keeps its level
        ("[W424 03:40:28.559765110 compiler_depend.ts:432] Warning: NPU warning, error code is 507013", "WARNING"),
    ],
)
def test_the_level_a_line_was_logged_at(line, level):
    pre = strip_prefix_info(line)
    text = pre.text if parse_line(line).grammar == "plain" else line
    assert line_level(parse_line(text), pre.level, text) == level


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_a_warning_line_does_not_head_over_a_later_error(tmp_path, engine):
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.logscan import ScanSpec, scan_file

    log = tmp_path / "job.log"
    log.write_text(f"{LITE_WARNING}\nloading weights\n{NPU_OOM}\n", encoding="utf-8")
    sigs = signature_set(load_catalogue())
    spec = ScanSpec(sigs, engine="python") if engine == "python" else ScanSpec(sigs, grep_min_size=0)
    res = scan_file(str(log), spec)
    assert res.get("engine", "python").startswith(engine)
    env = res["hits"]["ENV084"]
    assert env["first"]["severity"] == "warning" and env["first"]["logged_as"] == "WARNING"
    assert not env.get("loud")

    r = run_cli("logs", "--json", str(log))
    rep = json.loads(r.out)
    assert rep["root_cause"]["rule"].startswith("MEM"), rep["root_cause"]
    f = next(f for f in rep["findings"] if f["rule"] == "ENV084")
    assert f["severity"] == "warning" and "(logged at WARNING level)" in f["message"]


def test_alone_the_warning_line_still_heads_and_an_error_line_of_the_rule_keeps_it_an_error(tmp_path):
    alone = tmp_path / "alone.log"
    alone.write_text(LITE_WARNING + "\n", encoding="utf-8")
    rep = json.loads(run_cli("logs", "--json", str(alone)).out)
    assert rep["root_cause"]["rule"] == "ENV084"  # nothing else said what failed: the warning is the lead

    # the same message once as a warning, once printed bare (as an error would be): the rule stays an error
    twice = tmp_path / "twice.log"
    twice.write_text(LITE_WARNING + "\n" + LITE_WARNING.removeprefix("WARNING ") + "\n", encoding="utf-8")
    rep = json.loads(run_cli("logs", "--json", str(twice)).out)
    f = next(f for f in rep["findings"] if f["rule"] == "ENV084")
    assert f["severity"] == "error" and "logged at" not in f["message"]


def test_an_info_progress_line_keeps_its_rules_severity(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(INFO_NAN + "\n", encoding="utf-8")
    rep = json.loads(run_cli("logs", "--json", str(log)).out)
    nan = [f for f in rep["findings"] if f["rule"].startswith("NUM")]
    assert nan and all("logged at" not in f["message"] for f in nan)
    assert any(f["severity"] == "error" for f in nan)


@pytest.mark.parametrize("engine", ["python", "auto"])
def test_an_error_logged_before_a_cut_traceback_is_an_error_event(tmp_path, engine):
    """GPUStack's `… - gpustack.worker.serve_manager - ERROR - Error provisioning …` (gpustack-3969, copied
    exactly) is an error by its level even where no rule knows its message (every signature rule off here): the
    fallback reads it, and the verdict is not "incomplete traceback" for the traceback cut after it."""
    from msdoctor.checks.logs import open_traceback, unclassified_events
    from msdoctor.facts.logs import collect
    from msdoctor.wordinggen import stripped_catalogue

    src = Path(__file__).resolve().parents[1] / "realworld" / "logs" / "gpustack-3969-failed-to-get-vllm-backend-image-910b3-2025"
    log = tmp_path / "paste.log"
    log.write_bytes((src / "log.txt").read_bytes())
    facts, _ = collect([str(log)], stripped_catalogue(), engine=engine)
    texts = [e["text"] for e in unclassified_events(facts)]
    assert texts[:1] == ["Error provisioning model instance Qwen3-nntL6: Failed to get vLLM backend image"], texts
    assert open_traceback(facts) is not None  # the cut traceback is still seen; the error line above says more


# hiascend-forum-mindspore-2.2-gpu-nccl-world-group-create-comm-failed-cuda-11.8-2023: MindSpore's own [ERROR] lines
COMM_GROUP_ERRORS = (
    "[ERROR] DISTRIBUTED(27927,7f62a2055700,python3):2023-11-06-11:06:57.379.827 [mindspore/ccsrc/distributed/collective/"
    "collective_manager.cc:86] operator()] Failed to execute function asynchronously\n"
    "[ERROR] DISTRIBUTED(27927,7f638229a740,python3):2023-11-06-11:06:57.379.867 [mindspore/ccsrc/distributed/collective/"
    "collective_manager.cc:285] CreateCommunicationGroup] Failed to create comm group on device side for nccl_world_group\n"
)  # fmt: skip


def test_an_error_no_rule_knows_heads_over_a_line_logged_at_warning(tmp_path, monkeypatch, capsys):
    """An error rule's line that its program logged at WARNING (ENV084 here) is weak beside an [ERROR] line that
    no rule reads: the error's wording (X099) heads. COMM092, the rule that now reads these lines, is taken out of
    the catalogue so that they are an error no rule knows, as they were before it existed."""
    from msdoctor import cli
    from msdoctor.engine import catalogue as cat_mod
    from msdoctor.engine.catalogue import Catalogue

    full = cat_mod.load_catalogue()
    without = Catalogue([r for r in full if r.id != "COMM092"])
    monkeypatch.setattr("msdoctor.commands.logs.load_catalogue", lambda: without)
    log = tmp_path / "job.log"
    log.write_text(LITE_WARNING + "\n" + COMM_GROUP_ERRORS, encoding="utf-8")
    cli.main(["logs", "--json", str(log)])
    rep = json.loads(capsys.readouterr().out)
    assert rep["root_cause"]["rule"] == "COMM099", rep["root_cause"]
    assert rep["root_cause"]["classified_by"] == "wording"
    env = next(f for f in rep["findings"] if f["rule"] == "ENV084")
    assert env["severity"] == "warning" and env["data"]["logged_as"] == "WARNING"


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_a_cann_error_relayed_under_a_warning_print_heads_over_the_wrapper(tmp_path, engine):
    """vllm-ascend#641: `… the current working operator name is HcclAllreduce.` (COMM078, a consequence) and then
    the HCCL message that explains it, printed by torch_npu as `[W… compiler_depend.ts:432] Warning: EI0003: …`."""
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.logscan import ScanSpec, scan_file

    case = Path(__file__).resolve().parents[1] / "realworld/logs/vllm-ascend-641-310p3-hccl-allreduce-ei0003-checkdatatype-bfloat16-2025/paste.log"
    log = tmp_path / "job.log"
    log.write_text(case.read_text(encoding="utf-8"), encoding="utf-8")
    sigs = signature_set(load_catalogue())
    spec = ScanSpec(sigs, engine="python") if engine == "python" else ScanSpec(sigs, grep_min_size=0)
    res = scan_file(str(log), spec)
    hit = res["hits"]["COMM094"]
    assert hit["first"]["severity"] == "error" and not hit["first"].get("logged_as")
    assert hit["first"]["groups"]["dtype"] == "bfloat16"
