"""A rule's `\\b` where Chinese runs straight into the message: Python's `\\b` is Unicode-aware and a CJK character is a
word character, so `…失联Device Lost` or `…任然OOM` held no boundary before the English word and no `\\bWord` matched.
Signatures and the keyword fallback compile `\\b` as a boundary that also holds between CJK and ASCII
(msdoctor.engine.catalogue.cjk_boundaries). Lines copied from tests/realworld/logs/<case>/ (named beside each)."""

from __future__ import annotations

import re

import pytest

from msdoctor.engine.catalogue import LinePattern, Signature, cjk_boundaries
from msdoctor.facts.logfamily import scores

# vllm-ascend-11171-310p1-v0140rc1-310p-qwen25-7b-device-lost-heartbeat-lost-title-2026/title.log
DEVICE_LOST = "[Bug]: 310P1启动vllm-ascend服务后推理问答过程中出现NPU设备失联Device Lost / Heartbeat Lost"
# llamafactory-7528-910-32g-8npu-r1-distill-qwen14b-cutoff8192-zero3-offload-still-oom-2025/title.log
STILL_OOM = "昇腾910 32G 8卡，微调DeepSeek-R1-Distill-Qwen-14B，设置cutoff_len: 8192，启动deepspeed z3 offload，任然OOM"


def test_a_signature_matches_after_chinese() -> None:
    assert re.search(r"\bDevice Lost\b", DEVICE_LOST) is None  # what Python's own \b does
    assert Signature(r"\bDevice Lost\b").regex.search(DEVICE_LOST)


def test_a_keyword_matches_after_chinese() -> None:
    assert scores([STILL_OOM]).get("MEM", (0, []))[1] == ["OOM"]


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("就报NotImplementedError", True),  # CJK before
        ("NotImplementedError了", True),  # CJK after
        ("xNotImplementedError", False),  # an ASCII letter before: still no boundary
        ("NotImplementedErrors", False),
        ("NotImplementedError", True),
    ],
)
def test_the_boundary_holds_between_cjk_and_ascii_only(text: str, matches: bool) -> None:
    assert bool(re.search(cjk_boundaries(r"\bNotImplementedError\b"), text)) is matches


def test_classes_and_escaped_backslashes_are_left_alone() -> None:
    assert cjk_boundaries(r"[\b]x") == r"[\b]x"  # a backspace in a class
    assert cjk_boundaries(r"[]\b]") == r"[]\b]"  # `]` first is a literal: the class goes on
    assert cjk_boundaries(r"C:\\bin") == r"C:\\bin"  # an escaped backslash, then a literal b
    assert cjk_boundaries("no boundary") == "no boundary"


def test_the_cjk_form_is_case_blind_where_the_rule_is() -> None:
    """The CJK class is scoped case-sensitive (`(?-i:…)`, cheaper to compile); the rule's own `(?i)` still holds."""
    assert re.search(cjk_boundaries(r"(?i)\bnotimplementederror\b"), "就报NotImplementedError了")
    assert not re.search(cjk_boundaries(r"(?i)\bnotimplementederror\b"), "xNotImplementedError")


def test_the_cjk_form_is_compiled_only_for_a_line_that_needs_it() -> None:
    """An ASCII log never compiles the CJK form (~5 ms a pattern: most of one `msdoctor logs` on a short paste)."""
    lp = LinePattern(r"\bDevice Lost\b")
    assert lp.search("NPU Device Lost") and lp._wide is None
    assert lp.search(DEVICE_LOST) and lp._wide is not None
    assert LinePattern("no boundary").wide is not None
