"""The real-world corpus: log text pasted by real users in public threads, each with its expected verdict.

A case that msdoctor diagnoses must keep its verdict (found); a case marked ``expect.gap: <reason>`` in its
SOURCE.md is a known gap and must not be called found silently (remove the marker when it is fixed). No case
may ever get a misleading headline (a diagnosis of another category).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("realworld", ROOT / "bench" / "realworld.py")
assert _spec and _spec.loader
realworld = importlib.util.module_from_spec(_spec)
sys.modules["realworld"] = realworld
_spec.loader.exec_module(realworld)

AREAS = {"COMM", "MEM", "RT", "ENV", "CKPT", "NUM", "DATA", "PAR", "PERF"}
CASES = realworld.cases()


def test_corpus_is_there() -> None:
    assert CASES, "tests/realworld/logs holds no case"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_is_documented(case) -> None:
    assert re.match(r"https?://\S+", case.meta.get("source", "")), "SOURCE.md needs source: <thread address>"
    assert re.match(r"\d{4}-\d{2}(-\d{2})?$", case.meta.get("date", "")), "SOURCE.md needs date: YYYY-MM-DD"
    assert case.meta.get("cause"), "SOURCE.md needs cause: (what the thread established, or unresolved)"
    assert case.category in AREAS, f"expect.category {case.category!r} is not a rule area"
    logs = [p for p in case.path.rglob("*") if p.is_file() and p.name != "SOURCE.md"]
    assert logs and all(p.stat().st_size > 0 for p in logs), "a case needs its log text"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_verdict(case) -> None:
    s = realworld.score(case)
    assert s.status != "misleading", f"misleading headline {s.headline}: {s.why}"
    gap = case.meta.get("expect.gap")
    if gap:
        assert s.status != "found", f"{case.name} is now found: remove its expect.gap marker ({gap})"
    else:
        assert s.status == "found", f"{s.status}: headline {s.headline} rank {s.headline_rank}: {s.why}"


def test_writing_the_figure_keeps_the_history_under_it(tmp_path, monkeypatch) -> None:
    # `bench/realworld.py --write` replaces the stamp, the score line and its table; the blind batches written
    # under them stay (a rewrite once dropped them)
    res = tmp_path / "RESULTS.md"
    res.write_text("# Benchmarks\n\n## Real-world logs (`bench/realworld.py`)\n\nMeasured old.\n\n1 cases: 1 found\n\n"
                   "| category | cases |\n| --- | ---: |\n| ENV | 1 |\n\nHistory: the first blind batch scored 41 %.\n\n"
                   "## Next section\n\nkept\n", encoding="utf-8")
    monkeypatch.setattr(realworld, "RESULTS", res)
    realworld.write_results("2 cases: 2 found\n\n| category | cases |\n| --- | ---: |\n| ENV | 2 |")
    text = res.read_text(encoding="utf-8")
    assert "2 cases: 2 found" in text and "| ENV | 2 |" in text and "1 cases" not in text and "| ENV | 1 |" not in text
    assert "History: the first blind batch scored 41 %." in text and text.endswith("## Next section\n\nkept\n")
