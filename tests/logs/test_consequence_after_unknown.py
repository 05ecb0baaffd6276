"""A consequence rule does not head the verdict over the Python exception printed before it when no rule knows that
exception (vllm-ascend #2723: the engine died of `RuntimeError: Invalid request status: WAITING_FOR_FSM`, the server
shut down, and CANN's TBE helper then printed `main process disappeared!` — MEM016, a consequence that reads as a
host-OOM kill, headed the first sighting). The verdict is then the unrecognised error, with the consequence beside it;
a consequence printed first, or after a CANN plog line (no traceback), keeps the headline."""

from __future__ import annotations

import pytest

from tests.logs.conftest import paste_report as _report

# vllm-ascend #2723's engine traceback (real lines) with its last line's message replaced by one no rule knows (the
# real message now has its rule, ENV828), then the real TBE line the helper printed at exit
ENGINE = """\
(EngineCore_0 pid=280674) ERROR 09-03 07:51:00 [core.py:634] EngineCore encountered a fatal error.
(EngineCore_0 pid=280674) ERROR 09-03 07:51:00 [core.py:634] Traceback (most recent call last):
(EngineCore_0 pid=280674) ERROR 09-03 07:51:00 [core.py:634]   File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 266, in step
(EngineCore_0 pid=280674) ERROR 09-03 07:51:00 [core.py:634]     scheduler_output = self.scheduler.schedule()
(EngineCore_0 pid=280674) ERROR 09-03 07:51:00 [core.py:634]   File "/vllm-workspace/vllm-ascend/vllm_ascend/core/scheduler.py", line 216, in schedule
(EngineCore_0 pid=280674) ERROR 09-03 07:51:00 [core.py:634]     raise RuntimeError(f"Invalid request status: {request.status}")
(EngineCore_0 pid=280674) ERROR 09-03 07:51:00 [core.py:634] RuntimeError: Quibble state QX_7 reached the planner twice
"""
TBE = "[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!\n"
# a CANN plog error line (real, Paddle-Lite #7669) that no rule reads on its own: not a Python exception
PLOG = ("[ERROR] GE(39944,ssd_detection_demo):2021-11-18-01:09:39.548.671 [ge_generator.cc:624]39944 GenerateModel: "
        "ErrorNo: 1343266819(Graph manager build graph failed.) [COMP][DEFAULT]Build model failed.\n")


def test_a_consequence_after_an_unknown_exception_goes_beside_it(tmp_path):
    rep = _report(tmp_path, ENGINE + TBE * 3)
    rc = rep["root_cause"]
    assert rc["verdict"] == "unrecognised-error" and rc["rule"] is None
    assert rc["beside"] == "MEM016" and "Quibble state QX_7" in rc["reason"]
    assert {f["rule"]: f["severity"] for f in rep["findings"]}["MEM016"] == "info"


def test_a_consequence_printed_before_the_exception_keeps_the_headline(tmp_path):
    rc = _report(tmp_path, TBE + ENGINE)["root_cause"]
    assert rc["rule"] == "MEM016"


def test_a_plog_line_before_the_consequence_is_not_a_python_exception(tmp_path):
    rc = _report(tmp_path, PLOG + TBE)["root_cause"]
    assert rc["rule"] == "MEM016"


# chiro2001's Mooncake evidence log (tests/realworld/logs/chiro-dsv41-evidence-mooncake-…-127-0-0-1-…): the real line of
# an engine that advertises a loopback host; in a single-host test that is right, so RT049 is context
LOOPBACK = "I1009 05:17:38.395398    77 transfer_engine_impl.cpp:115] Transfer Engine parseHostNameWithPort. server_name: 127.0.0.1 port: 12001\n"


# torch_npu's once-per-operator warning (real line, tests/rules/fixtures/PERF029.log): a slower run, not a failure
SLOW_OP = "  [W AddKernelNpu.cpp:80] Warning: The oprator of add is executed, Currently High Accuracy but Low Performance OP with 64-bit has been used, Please Do Some Cast at Python F\n"


# torch_npu's CPU fallback of an operator (real line, tests/rules/fixtures/ENV086.log): "performance implications"
CPU_FALLBACK = ("[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::linalg_lstsq.out' is not currently supported on the NPU backend and will fall back to run on the CPU. This may have performance implications. (function npu_cpu_fallback)"
                "\n")


@pytest.mark.parametrize(("line", "rule"), [(LOOPBACK, "RT049"), (SLOW_OP, "PERF029"), (CPU_FALLBACK, "ENV086")])
def test_a_warning_that_heads_only_alone_is_context_beside_an_unknown_exception(tmp_path, line, rule):
    rep = _report(tmp_path, line + ENGINE)
    rc = rep["root_cause"]
    assert rc["verdict"] == "unrecognised-error" and rc["rule"] is None and "Quibble state QX_7" in rc["reason"]
    assert rc["beside"] == rule and "a warning, context" in rc["reason"]
    assert {f["rule"]: f["severity"] for f in rep["findings"]}.get(rule) == "info"


def test_a_warning_that_heads_only_alone_still_heads_alone(tmp_path):
    assert _report(tmp_path, SLOW_OP)["root_cause"]["rule"] == "PERF029"
