"""Signatures must scan long adversarial lines in linear time (a pasted log may hold one 100 KiB line).

Measured as a ratio, never a threshold: the time on a line 4× longer must grow about 4×, not 16×.
"""

from __future__ import annotations

import re
import time

import pytest

from msdoctor.engine.catalogue import load_catalogue

CATALOGUE = load_catalogue()

# (rule, signature index, builder of an adversarial line of about n characters)
CASES = [
    ("COMM005", 0, lambda n: "a" * n + " is the first one timed oux"),
    ("COMM005", 0, lambda n: "1" * n + " is the first one timed oux"),
    ("COMM004", 1, lambda n: "Time out nodes are [" * (n // 20)),
    ("COMM004", 0, lambda n: "The total number of timed out node is 1. Timed out node list is: " * (n // 64)),
]


def _pattern(rule_id: str, index: int) -> re.Pattern[str]:
    rule = next(r for r in CATALOGUE if r.id == rule_id)
    return re.compile(rule.signatures[index].pattern)


def _best(pat: re.Pattern[str], line: str, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        list(pat.finditer(line))
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.parametrize("rule_id,index,build", CASES, ids=lambda c: c if isinstance(c, str) else None)
def test_signature_is_linear_on_adversarial_line(rule_id, index, build):
    pat = _pattern(rule_id, index)
    small, large = _best(pat, build(16384)), _best(pat, build(65536))
    # linear: ~4x; quadratic: ~16x. A floor keeps timer noise on microsecond runs from deciding.
    assert large <= max(10 * small, 0.02), f"{rule_id}[{index}]: {small:.4f}s -> {large:.4f}s for 4x the line"


def test_real_lines_keep_their_values():
    line = ("RuntimeError: The total number of timed out node is 2. Timed out node list is: [const vector]{0, 1}, "
            "worker 0 is the first one timed out, please check its log.")
    assert _pattern("COMM005", 0).search(line).group("first") == "worker 0"
    real = ("[ERROR] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.722.000 "
            "[mindspore/parallel/cluster/process_entity/_api.py:431] Time out nodes are ['3']")
    assert _pattern("COMM004", 1).search(real).group("nodes") == "'3'"
