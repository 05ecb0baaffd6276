"""The two-stage wording fallback measured honestly: leave-one-case-out on the corpus, and the blind sets.

Every signature rule is switched off (msdoctor.wordinggen.stripped_catalogue), so each case's error blocks are
those of an error no rule knows. Stage 1 is the keyword fallback (X099, msdoctor/data/error_families.toml; a
PAR verdict is NUM where the case names no parallel layout, as `msdoctor logs` reads it: logfamily.by_layout);
where it abstains, stage 2 is the word-statistics guess (X097, msdoctor/facts/wording.py). The corpus is
guessed by ten-fold cross-validation (a case's model is trained WITHOUT the tenth of the corpus it is in: the
rules + the other nine tenths; leave-one-case-out would train the regression 882 times); the blind sets
(tests/realworld/blind/*) are guessed by the model built from the rules and the whole corpus, as shipped.
A case is right / wrong / abstained per stage. The last row asks how it does on cases of the future: the corpus
in the order git first added each case, its second half cut in fifths, each fifth guessed by a model of only
what was there before it (the cases and the rule files added earlier), keyword stage as today.

    python bench/wording.py [--write] [--verbose] [--threshold P]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Container
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
HEAD = "## Real-world logs, two-stage wording fallback"
Blocks = list[tuple[list[str], list[str]]]


def keyword_area(blocks: list[tuple[list[str], list[str]]], layout: bool = False) -> str | None:
    """The keyword fallback's area for a case's blocks, as `msdoctor logs` reads it: a PAR verdict is NUM where the
    input names no parallel layout (``layout``) and no winning word names a split (``logfamily.by_layout``)."""
    from msdoctor.facts.logfamily import by_layout, classify

    for lines, frames in blocks[:5]:
        c = by_layout(classify(lines, frames=frames), layout)
        if c is not None:
            return c.area
    return None


def score_case(tally: Counter[str], area: str, blocks: Blocks, model: Any, toks: Callable[[Blocks], set[str]],
               layout: bool = False) -> Any:  # fmt: skip
    """Count one case in ``tally`` (no error block / keyword right or wrong / guess right, wrong or abstained);
    the model's guess where the keyword stage abstained, else None."""
    if not blocks:
        tally["none"] += 1
        return None
    kw = keyword_area(blocks, layout)
    if kw is not None:
        tally["kw right" if kw == area else "kw wrong"] += 1
        return None
    g = model.guess(toks(blocks))
    tally["abstain" if g is None else ("nb right" if g.area == area else "nb wrong")] += 1
    return g


def added_times() -> dict[str, int]:
    """When git first added each corpus case (folder name) and each rule file (rule id), in epoch seconds."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "log", "--diff-filter=A", "--name-only", "--format=@%ct", "--",
                              "tests/realworld/logs", "rules"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return {}
    when: dict[str, int] = {}
    t = 0
    for line in out.splitlines():  # newest first: the last time a path is seen is when it was added first
        if line.startswith("@"):
            t = int(line[1:])
        elif line.endswith("/SOURCE.md"):
            when[line.split("/")[-2]] = t
        elif line.startswith("rules/") and line.endswith(".toml"):
            when[Path(line).stem] = t
    return when


def by_date(corpus: list[tuple[str, str, Blocks]], named: list[tuple[str, str, set[str]]],
            toks: Callable[[Blocks], set[str]], params: dict[str, Any], layouts: Container[str] = frozenset()) -> str:  # fmt: skip
    """The table row of the split by collection date (see the module's docstring)."""
    from msdoctor import wordinggen as wg
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.facts.wording import from_doc

    when = added_times()
    if not when:
        return "| corpus by collection date | (not a git checkout) | | | | | | |"
    ids = [r.id for r in load_catalogue()]
    order = sorted(corpus, key=lambda c: (when.get(c[0], 0), c[0]))
    n, start = len(order), len(order) // 2
    tally: Counter[str] = Counter()
    bounds = [start + (n - start) * i // 5 for i in range(6)]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        cut = when.get(order[lo][0], 0)
        before = {c[0] for c in order[:lo]}
        docs = [(a, t) for name, a, t in named if name in before]
        rules = list(wg.rule_docs(rules=[i for i in ids if when.get(i, 0) < cut]))
        model = from_doc(wg.build(rules + docs, params))
        for name, area, blocks in order[lo:hi]:
            score_case(tally, area, blocks, model, toks, name in layouts)
    m = n - start
    return (f"| corpus by collection date (last half, by fifths) | {m} | {m - tally['none']} | {tally['kw right']} | "
            f"{tally['kw wrong']} | {tally['nb right']} | {tally['nb wrong']} | {tally['abstain']} |")


def main(argv: list[str] | None = None) -> int:
    from msdoctor import wordinggen as wg
    from msdoctor.facts.wording import MAX_BLOCKS, from_doc, tokens

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--threshold", type=float, default=wg.PARAMS["threshold"])
    args = ap.parse_args(argv)
    params = {**wg.PARAMS, "threshold": args.threshold}
    cat = wg.stripped_catalogue()
    rules = list(wg.rule_docs())

    layouts: set[str] = set()  # the cases whose input names a parallel layout

    def blocks_of(corpus: Path) -> list[tuple[str, str, list[tuple[list[str], list[str]]]]]:
        out = []
        for case in sorted(p for p in corpus.iterdir() if (p / "SOURCE.md").is_file()):
            area = wg.category(case)
            if area:
                blocks, layout = wg.case_reading(case, cat)
                out.append((case.name, area, blocks))
                if layout:
                    layouts.add(f"{corpus.name}/{case.name}" if corpus != wg.CORPUS else case.name)
        return out

    def toks(blocks: list[tuple[list[str], list[str]]]) -> set[str]:
        t: set[str] = set()
        for lines, frames in blocks[:MAX_BLOCKS]:
            t |= tokens(lines, frames)
        return t

    corpus = blocks_of(wg.CORPUS)
    named = [(n, area, toks(b)) for n, area, b in corpus if b]
    docs = [(area, t) for _n, area, t in named]
    sets = {"corpus (ten-fold)": corpus}
    for d in sorted((ROOT / "tests/realworld/blind").iterdir()):
        if d.is_dir():
            sets[f"blind {d.name}"] = blocks_of(d)
    full = from_doc(wg.build(rules + docs, params))
    folds = 10
    fold_of = {n: i % folds for i, (n, _a, _t) in enumerate(named)}
    fold_models = {f: from_doc(wg.build(rules + [(a, t) for n, a, t in named if fold_of[n] != f], params))
                   for f in range(folds)}  # fmt: skip
    lines_out = [f"threshold {params['threshold']}", "",
                 "| set | cases | with an error block | keyword right | keyword wrong | guess right | guess wrong | abstained |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for label, items in sets.items():
        tally: Counter[str] = Counter()
        for name, area, blocks in items:
            model = fold_models[fold_of.get(name, 0)] if label.startswith("corpus") else full  # (unused without blocks)
            key = name if label.startswith("corpus") else f"{label.removeprefix('blind ')}/{name}"
            g = score_case(tally, area, blocks, model, toks, key in layouts)
            if args.verbose and g is not None and g.area != area:
                print(f"wrong {area:5} got {g.area:5} {g.probability:.2f} {name[:50]:50} {list(g.words)}")
        n = len(items)
        lines_out.append(f"| {label} | {n} | {n - tally['none']} | {tally['kw right']} | {tally['kw wrong']} | "
                         f"{tally['nb right']} | {tally['nb wrong']} | {tally['abstain']} |")  # fmt: skip
    lines_out.append(by_date(corpus, named, toks, params, layouts))
    text = "\n".join(lines_out)
    print(text)
    if args.write:
        results = ROOT / "bench" / "RESULTS.md"
        old = results.read_text(encoding="utf-8")
        pattern = re.compile(re.escape(HEAD) + r".*?(?=\n## |\Z)", re.S)
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        body = f"{HEAD}\n\nMeasured {when}. {__doc__.split(chr(10) * 2)[1].strip()}\n\n{text}\n"
        new = pattern.sub(lambda _m: body.rstrip("\n") + "\n", old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + body
        results.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
