"""Build ``msdoctor/data/wording_model.json``, the word statistics of :mod:`msdoctor.facts.wording`.

``python -m msdoctor.wordinggen [--check]``. Documents, each labelled with an area:

* every rule of the catalogue: its title, and its example lines (the real message the rule reads);
* every case of the real-world corpus (``tests/realworld/logs/``): the first error blocks of its log as the
  fallback reads them when NO signature rule is loaded (so the words are those of an error no rule knows).

The file is generated, never edited: a test rebuilds it and fails when the committed copy is stale (a new
rule or corpus case changes the counts). Deterministic: sorted keys, integer counts.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from msdoctor.engine.catalogue import Catalogue, load_catalogue, load_from, rules_root
from msdoctor.facts.logfamily import AREAS
from msdoctor.facts.wording import tokens

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "realworld" / "logs"
OUT = Path(__file__).resolve().parent / "data" / "wording_model.json"
# min_share 0 and threshold 0.6, measured with bench/wording.py (leave-one-case-out on the 704-case corpus, and the
# sealed blind sets): every word seen twice votes (keeping only words concentrated in one area, min_share 0.5,
# cost answers and rightness alike: 113 right / 48 wrong / 126 abstained at p 0.9 against 142 / 56 / 89 with all
# words), and a guess is given from p 0.6 (168 / 91 / 28: the guesses between 0.6 and 0.9 are right 26 times in
# 61). On the 737-case corpus with `err`/`api` as stop words: 174 / 88 / 39; sealed-1 14 / 2, sealed-2 7 / 2 (11 / 1
# and 3 / 1 before). It stays an info finding that never heads the report; under 0.9 its message calls itself weak.
PARAMS = {"alpha": 0.5, "prior_weight": 0.3, "min_words": 2, "threshold": 0.6, "min_docs": 2, "min_share": 0.0}
# PERF is not guessed: a slow job prints no error, and an error line is never a performance fault
GUESS_AREAS = tuple(a for a in AREAS if a != "PERF")
FALLBACK_CHECKS = ("logs.error_family", "logs.wording_guess")  # their titles are the area's name, not a message


def stripped_catalogue() -> Catalogue:
    """The catalogue without its signature rules (progress rules kept: they say where a rank was)."""
    return Catalogue([r for r in load_from(rules_root()) if not r.signatures or r.role == "progress"])


def case_blocks(path: Path, catalogue: Catalogue) -> list[tuple[list[str], list[str]]]:
    """The error blocks (lines, innermost frames) of a log folder as the fallback reads them, or []."""
    from msdoctor.checks.logs import error_block, fallback_candidates, unclassified_events
    from msdoctor.errors import MsDoctorError
    from msdoctor.facts.logs import collect

    try:
        facts, _scan = collect([str(path)], catalogue)
    except MsDoctorError:
        return []
    evs = unclassified_events(facts)
    return [(error_block(e, evs), [str(f) for f in e.get("frames") or []]) for e in fallback_candidates(facts)[:8]]


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


def rule_docs(catalogue: Catalogue | None = None) -> Iterator[tuple[str, set[str]]]:
    for r in catalogue or load_catalogue():
        if r.area not in GUESS_AREAS or r.check in FALLBACK_CHECKS:
            continue
        yield r.area, tokens([r.title])
        example = [ln for ln in (r.example or "").splitlines() if ln.strip() and not ln.lstrip().startswith("(see")]
        if example:
            yield r.area, tokens(example)


def build(docs: Iterable[tuple[str, set[str]]], params: dict[str, Any] = PARAMS) -> dict[str, Any]:
    n: Counter[str] = Counter()
    df: dict[str, Counter[str]] = defaultdict(Counter)
    for area, toks in docs:
        n[area] += 1
        for w in toks:
            df[w][area] += 1

    def share(w: str) -> float:  # the area's share of the word's area-normalised rates (rate, not count)
        rates = {a: df[w][a] / (n[a] + 1) for a in n}
        return max(rates.values()) / sum(rates.values())

    keep = {w: dict(sorted(df[w].items())) for w in sorted(df)
            if sum(df[w].values()) >= params["min_docs"] and share(w) >= params["min_share"]}  # fmt: skip
    return {"about": "generated by `python -m msdoctor.wordinggen`; do not edit (msdoctor/facts/wording.py)",
            "params": dict(params), "docs": {a: n[a] for a in GUESS_AREAS if n[a]}, "df": keep}  # fmt: skip


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
