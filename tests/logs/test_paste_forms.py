"""Real corpus logs pasted again in forms that bench/paste.py found to break a verdict: a markdown quote (`> ` before
every line, as GitHub issues quote the error they ask about), the whole log as one JSON string (a serving API's
error body) and a terminal's colour codes kept around each line. Each must give the verdict the log gives as it was pasted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from msdoctor.facts.logformats import split_embedded, split_embedded_at, split_flattened_at, strip_prefix_info
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import paste  # noqa: E402

CASES = ROOT / "tests" / "realworld" / "logs"
# dlrover#977: Megatron's load_checkpoint KeyErrors; the MindSpore TBE compile failure whose compiler check (EB0000)
# says why (NUM037, ahead of the block's generic `task compile Failed`, ENV016)
QUOTED = "dlrover-977-megatron-load-checkpoint-keyerror-iteration-flash-ckpt-2024"
IN_JSON = "mindspore-doc-eb0000-transpose-data-ub-exceed-bound-unsupported-2021"
# LLaMA-Factory#4836: torch_npu's CPU-fallback warning (ENV086), a blank line, then the kernel's EZ9999 (NUM030): in one
# string the blank line must still part the error from the warning's detail
IN_JSON_BLANK = "llamafactory-4836-ez9999-aivec-exception-baichuan2-2024"
# verl#4200: a metric line `training/rollout_probs_diff_max:nan` (NUM016) with a terminal's colour codes around it
IN_COLOUR = "verl-4200-fp16-npu-rollout-probs-nan-2025"
# 2026-12-03: a bare `EE8888:` line read as a bad device id (RT004) under a rank prefix; a traceback's frame line read
# only at a line's start (ENV835) under a compose prefix; an operator's generic `do tiling failed` (NUM062) ahead of
# the reason printed with it (COMM073's too-small HCCL buffer, PAR017's head count) in a JSON string or a joined line
IN_RANK = "modelbox-357-ee8888-stream-flags-unsupported-2023"
IN_COMPOSE = "ascend-pytorch-94-310p-npu-matmul-add-fp32-atb-linearoperation-createoperation-failed-2025"
TILING_BUFFER = "vllm-ascend-5287-hccl-buffsize-too-small-moe-dispatch-v2-a3-2025"
TILING_HEADS = "sglang-pr23572-npu-ascend-fa-ulysses-checkqshape-561002-2026"
# 2026-12-03: a log whose line breaks were lost (a forum that flattens a paste): its records are read one by one, so the
# kernel's EZ9999 / E39999 after torch_npu's CPU-fallback warning (ENV086) and the socket time-out's EI0006 after it head
# again, and vLLM-Ascend's EI0002 / 507048 block under Ray's prefixes is not read as the runtime's own time-out (NUM011)
FALLBACK_AICPU = "pytorch-136302-isin-cpu-fallback-e39999-aicpu-21008-507018-2024"
FALLBACK_SOCKET = "llamafactory-5071-ei0006-socket-timeout-ppo-2024"
RAY_EI0002 = "vllm-ascend-1443-507048-ei0002-ray-2025"
# 2026-12-07: TensorFlow's kernel list ` <no registered kernels>` (ENV341) keeps its leading space after a compose
# prefix (`vllm-1  |  <no registered kernels>`): the prefix was taken only before a non-blank character
COMPOSE_INDENT = "mobilenetv2-yolov3-26-tf114-multi-gpu-ncclallreduce-no-registered-kernels-install-nccl-2019"


def root_rule(path: Path) -> str | None:
    r = run_cli("logs", "--json", str(path))
    return (json.loads(r.out).get("root_cause") or {}).get("rule")


def test_a_markdown_quote_is_a_paste_prefix():
    assert strip_prefix_info("> KeyError: 'total_iters'").text == "KeyError: 'total_iters'"
    assert strip_prefix_info("> > RuntimeError: x").text == "RuntimeError: x"
    # the pytest report's `>       code` line stays a code line, not a message
    assert strip_prefix_info(">       iteration = state_dict['iteration']").text == "iteration = state_dict['iteration']"
    assert strip_prefix_info("a -> b").text == "a -> b"


def test_a_compose_prefix_keeps_the_lines_own_indent():
    assert strip_prefix_info("vllm-1  |     x = f()").text == "x = f()"
    assert strip_prefix_info("vllm-1  |  <no registered kernels>").text == "<no registered kernels>"
    assert strip_prefix_info("vllm-1  | RuntimeError: x").text == "RuntimeError: x"


def test_an_embedded_string_loses_its_json_quotes():
    assert split_embedded('{"error": "Traceback (most recent call last):\\nKeyError: \'x\'\\n"}') == [
        "Traceback (most recent call last):", "KeyError: 'x'"]  # fmt: skip
    assert split_embedded('{"detail": {"message": "a\\nb"}}') == ["a", "b"]
    assert split_embedded_at('"a\\n\\nb\\n"') == [(0, "a"), (2, "b")]


@pytest.mark.parametrize(
    ("case", "form"),
    [(QUOTED, "quote"), (IN_JSON, "json"), (IN_JSON_BLANK, "json"), (IN_COLOUR, "ansi"), (IN_RANK, "rank prefix"),
     (IN_COMPOSE, "compose prefix"), (IN_COMPOSE, "oneline"), (TILING_BUFFER, "json"), (TILING_HEADS, "json"),
     (TILING_HEADS, "oneline"), (IN_JSON_BLANK, "oneline"), (FALLBACK_AICPU, "oneline"), (FALLBACK_SOCKET, "oneline"),
     (RAY_EI0002, "oneline"), (COMPOSE_INDENT, "compose prefix")],
)
def test_verdict_survives_the_paste_form(case, form, tmp_path):
    src = CASES / case
    name = next(p.name for p in src.iterdir() if p.name != "SOURCE.md")
    as_pasted = root_rule(src / name)
    assert as_pasted is not None
    again = paste.FORMS[form]((src / name).read_text(encoding="utf-8"))
    (tmp_path / name).write_text(again, encoding="utf-8")
    assert root_rule(tmp_path / name) == as_pasted


def _log_lines(case: str) -> list[str]:
    src = CASES / case
    name = next(p.name for p in src.iterdir() if p.name != "SOURCE.md")
    return (src / name).read_text(encoding="utf-8").splitlines()


def test_a_flattened_log_is_cut_into_its_records():
    flat = " ".join(ln.strip() for ln in _log_lines(FALLBACK_SOCKET) if ln.strip())
    pieces = [p for _i, p in split_flattened_at(flat)]
    assert pieces[0].startswith("[W VariableFallbackKernel.cpp:51] Warning: CAUTION")
    assert pieces[1].startswith("EI0006: 2024-08-05-18:15:21.270.506 Getting socket times out.")


@pytest.mark.parametrize(
    ("case", "marker"),
    [("vllm-ascend-2378-deepseek-v3-w8a8-npu-oom-load-model-2025", "NPU out of memory. Tried to allocate"),
     ("vllm-ascend-1048-infer-schema-block-size-list-int-torch-version-2025", "ValueError: infer_schema")],
)
def test_one_long_record_under_its_prefixes_stays_one_line(case, marker):
    """Ray's `(Worker pid=N)`, vLLM's `ERROR 08-14 11:52:41 [file:N]` and the exception after them are one record."""
    line = next(ln for ln in _log_lines(case) if marker in ln and len(ln) >= 300)
    assert split_flattened_at(line) == [(0, line)]


def test_a_code_block_after_a_warning_is_not_the_warnings_detail(tmp_path):
    """torch_npu's CPU-fallback warning (ENV086, a root-cause warning) then, on the next line, the kernel's EZ9999: the
    CANN block under a line a rule read is that line's detail only after an error or a wrapper (ERR02200, a
    consequence), not after a warning of its own."""
    lines = [ln for ln in _log_lines(IN_JSON_BLANK) if ln.strip()]
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert root_rule(tmp_path / "log.txt") == "NUM030"
