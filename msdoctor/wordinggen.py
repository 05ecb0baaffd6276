"""Build ``msdoctor/data/wording_model.json``, the word statistics of :mod:`msdoctor.facts.wording`.

``python -m msdoctor.wordinggen [--check]``. Documents, each labelled with an area:

* every rule of the catalogue: its title, its example lines (the real message the rule reads), and the
  messages its `detects` text quotes in backticks (other real wordings it reads);
* every case of the real-world corpus (``tests/realworld/logs/``): the first error blocks of its log as the
  fallback reads them when NO signature rule is loaded (so the words are those of an error no rule knows).

The file is generated, never edited: a test rebuilds it and fails when the committed copy is stale (a new
rule or corpus case changes the counts). Deterministic: sorted keys, integer counts.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from msdoctor.engine.catalogue import Catalogue, load_catalogue, load_from, rules_root
from msdoctor.facts.logfamily import AREAS
from msdoctor.facts.wording import tokens

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "realworld" / "logs"
OUT = Path(__file__).resolve().parent / "data" / "wording_model.json"
# Softmax regression, trained by stochastic gradient descent in a fixed order (the file is deterministic):
# l2 1.0, 30 epochs, step 0.5 / (1 + epoch / 10), each document's step divided by the square root of its word
# count (a long block does not outweigh a short one). Measured with bench/wording.py on the 882-case corpus
# (ten-fold cross-validation, errors the keyword lists leave undecided): 210 right / 103 wrong against naive
# Bayes's 182 / 131; on the last 441 cases by collection date, each fifth guessed by a model of the cases
# and rules before it: 96 / 91 against 81 / 106 (both always answering; bench/wording.py's by-date row gives the
# shipped model's figure with its threshold). Threshold 0.4: on the 2221-case corpus (bench/wording.py
# --threshold) guesses between p 0.4 and 0.6 were right 51 times in 113 (ten-fold) and 41 in 108 (by collection
# date), under 0.4 14 in 37 and 5 in 28: below 0.4 not given; under 0.6 the message says "low-confidence".
# (On the 882-case corpus, guesses under p 0.6 had been right 13 times in 74 and were not given.)
PARAMS = {"l2": 1.0, "epochs": 30, "step": 0.5, "min_docs": 2, "min_words": 2, "threshold": 0.4}
# PERF is not guessed: a slow job prints no error, and an error line is never a performance fault
GUESS_AREAS = tuple(a for a in AREAS if a != "PERF")
FALLBACK_CHECKS = ("logs.error_family", "logs.wording_guess")  # their titles are the area's name, not a message


def stripped_catalogue() -> Catalogue:
    """The catalogue without its signature rules and their twins (progress rules kept: they say where a rank was)."""
    return Catalogue([r for r in load_from(rules_root()) if not (r.signatures or r.twin_of) or r.role == "progress"])


def case_blocks(path: Path, catalogue: Catalogue) -> list[tuple[list[str], list[str]]]:
    """The error blocks (lines, innermost frames) of a log folder as the fallback reads them, or []."""
    return case_reading(path, catalogue)[0]


def case_reading(path: Path, catalogue: Catalogue) -> tuple[list[tuple[list[str], list[str]]], bool]:
    """The error blocks of a log folder (as ``case_blocks``) and whether its input names a parallel layout (the
    keyword fallback reads an operator's shape words as NUM where it names none: ``logfamily.by_layout``)."""
    from msdoctor.checks.logs import error_block, fallback_candidates, unclassified_events
    from msdoctor.errors import MsDoctorError
    from msdoctor.facts.logs import collect

    try:  # the Python engine: a case is a few KB, where grep's start-up is most of the cost (7× slower, same blocks)
        facts, _scan = collect([str(path)], catalogue, engine="python")
    except MsDoctorError:
        return [], False
    evs = unclassified_events(facts)
    blocks = [(error_block(e, evs), [str(f) for f in e.get("frames") or []]) for e in fallback_candidates(facts)[:8]]
    return blocks, bool(facts.get_known("logs.parallel_layout"))


def category(case: Path) -> str | None:
    m = re.search(r"^expect\.category:\s*([A-Z]+)", (case / "SOURCE.md").read_text(encoding="utf-8"), re.M)
    return m.group(1) if m and m.group(1) in AREAS else None


def corpus_docs(corpus: Path = CORPUS) -> Iterator[tuple[str, str, set[str]]]:
    """(case name, area, words) for every corpus case that has an error block."""
    from msdoctor.facts.wording import MAX_BLOCKS

    cat = stripped_catalogue()
    for case in sorted(p for p in corpus.iterdir() if (p / "SOURCE.md").is_file()) if corpus.is_dir() else []:
        area = category(case)
        blocks = case_blocks(case, cat) if area in GUESS_AREAS else []
        if blocks:
            toks: set[str] = set()
            for lines, frames in blocks[:MAX_BLOCKS]:
                toks |= tokens(lines, frames)
            yield case.name, str(area), toks


QUOTED_RE = re.compile(r"`([^`\n]{6,300})`")


def rule_docs(catalogue: Catalogue | None = None, rules: Iterable[str] | None = None) -> Iterator[tuple[str, set[str]]]:
    """(area, words) of every rule's title, its example, and the messages its `detects` quotes (in backticks:
    the real wordings the rule reads besides its example); with ``rules``, of those rule ids only."""
    keep = None if rules is None else set(rules)
    for r in catalogue or load_catalogue():
        if r.area not in GUESS_AREAS or r.check in FALLBACK_CHECKS or (keep is not None and r.id not in keep):
            continue
        yield r.area, tokens([r.title])
        example = [ln for ln in (r.example or "").splitlines() if ln.strip() and not ln.lstrip().startswith("(see")]
        if example:
            yield r.area, tokens(example)
        quoted = QUOTED_RE.findall(r.detects or "")
        if quoted:
            yield r.area, tokens(quoted)


def build(docs: Iterable[tuple[str, set[str]]], params: dict[str, Any] = PARAMS) -> dict[str, Any]:
    """Train the model on (area, words) documents: words seen in min_docs documents or more vote."""
    data = [(a, sorted(t)) for a, t in docs if a in GUESS_AREAS]
    df = Counter(w for _a, t in data for w in t)
    vocab = sorted(w for w, c in df.items() if c >= params["min_docs"])
    index = {w: i for i, w in enumerate(vocab)}
    areas = [a for a in GUESS_AREAS if any(a == x for x, _t in data)]
    k = len(areas)
    weights = [[0.0] * k for _ in vocab]
    bias = [0.0] * k
    rows = [([index[w] for w in t if w in index], areas.index(a)) for a, t in data]
    decay = params["l2"] / max(1, len(rows))
    for epoch in range(int(params["epochs"])):
        rate = params["step"] / (1 + epoch / 10)
        for feats, y in rows:
            scores = [bias[j] + sum(weights[f][j] for f in feats) for j in range(k)]
            top = max(scores)
            exps = [math.exp(v - top) for v in scores]
            z = sum(exps)
            scale = rate / math.sqrt(max(1, len(feats)))
            for j in range(k):
                g = exps[j] / z - (1.0 if j == y else 0.0)
                bias[j] -= rate * g * 0.1
                for f in feats:
                    weights[f][j] -= scale * g + rate * decay * weights[f][j]
    kept = {}
    for w, row in zip(vocab, weights, strict=True):
        per = {a: round(v, 4) for a, v in zip(areas, row, strict=True) if round(v, 4) != 0}
        if per:
            kept[w] = per
    return {"about": "generated by `python -m msdoctor.wordinggen`; do not edit (msdoctor/facts/wording.py)",
            "params": dict(params), "bias": {a: round(b, 4) for a, b in zip(areas, bias, strict=True)}, "weights": kept}  # fmt: skip


def render(model: dict[str, Any]) -> str:
    return json.dumps(model, indent=0, sort_keys=True, ensure_ascii=False) + "\n"


def current() -> str:
    docs = list(rule_docs()) + [(a, t) for _n, a, t in corpus_docs()]
    return render(build(docs))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m msdoctor.wordinggen", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the committed model is stale")
    args = ap.parse_args(argv)
    text = current()
    if args.check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        if not same:
            print(f"{OUT}: stale; run python -m msdoctor.wordinggen", file=sys.stderr)
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
