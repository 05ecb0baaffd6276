"""The fallback classifier ALONE on the real-world corpus (every signature rule switched off).

For each case of tests/realworld/logs/ (or --corpus DIR), the log is scanned as `msdoctor logs` scans it,
then the first error event is taken whatever rule matched it (as if no rule had: the first exception line,
else the first error line) with up to two error lines of its block, and only the classifier
(msdoctor/facts/logfamily.py over msdoctor/data/error_families.toml) names its area — a PAR verdict on shape words
read as NUM where the input names no parallel layout (`by_layout`, as `msdoctor logs` reads it). A case is

* right       the area is the case's expect.category;
* misleading  another area;
* abstained   no clear winner (or no error line).

Because the keyword lists are generic wording of each area, not the corpus's lines, this is a figure of
how the fallback generalises to new wordings.

    python bench/classifier.py [--write] [--verbose] [--corpus DIR] [CASE...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realworld  # noqa: E402

STATUSES = ("right", "misleading", "abstained")


def error_events(facts: Any) -> list[dict[str, Any]]:
    evs: list[dict[str, Any]] = []
    for v in (facts.get_known("logs.ranks") or {}).values():
        evs.extend(e for e in v.get("after_progress") or [] if e.get("severity") == "error")
    evs.extend(e for e in (facts.get_known("logs.launcher") or {}).get("events", []) if e.get("severity") == "error")
    for h in facts.get_known("logs.hits") or []:  # single-process pastes: the hits' first lines
        evs.extend(e for e in h.get("firsts") or [] if e.get("severity") == "error")
    seen, out = set(), []
    for e in sorted(evs, key=lambda e: (str(e.get("file")), int(e.get("line") or 0))):
        k = (e.get("file"), e.get("line"))
        if k not in seen:
            seen.add(k)
            out.append(e)
    return out


def first_block(facts: Any) -> list[str]:
    from msdoctor.checks.logs import error_block

    evs = error_events(facts)
    if not evs:
        return []
    exc = [e for e in evs if "Error" in e.get("text", "") or "Exception" in e.get("text", "")]
    return error_block((exc or evs)[0], evs)


def classify_case(path: Path) -> tuple[str | None, list[str], tuple[str, ...]]:
    from msdoctor.errors import InputError
    from msdoctor.facts.logfamily import by_layout, classify
    from msdoctor.facts.logs import collect

    try:
        facts, _ = collect([str(path)])
    except InputError:
        return None, [], ()
    block = first_block(facts)
    c = by_layout(classify(block), bool(facts.get_known("logs.parallel_layout"))) if block else None
    return (c.area if c else None), block, (c.keywords if c else ())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--corpus", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.corpus is not None:
        realworld.CORPUS = args.corpus
    total: Counter[str] = Counter()
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for case in realworld.cases(args.cases):
        area, block, words = classify_case(case.path)
        status = "abstained" if area is None else "right" if area == case.category else "misleading"
        total[status] += 1
        per[case.category][status] += 1
        if args.verbose or status == "misleading":
            print(f"{status:10} {case.name:50} {case.category:5} got={area} {list(words)} {block[:1]!r:.160}")
    n = sum(total.values()) or 1
    text = "\n".join([
        f"{n} cases, classifier alone: {total['right']} right category, {total['misleading']} misleading, "
        f"{total['abstained']} abstained — right {100 * total['right'] / n:.0f} %, "
        f"misleading {100 * total['misleading'] / n:.0f} %",
        "", "| category | cases | right | misleading | abstained |", "| --- | ---: | ---: | ---: | ---: |",
        *[f"| {c} | {sum(v.values())} | " + " | ".join(str(v[k]) for k in STATUSES) + " |" for c, v in sorted(per.items())],
    ])  # fmt: skip
    print(text)
    if args.write:
        write(text)
    return 0


def write(text: str) -> None:
    head = "## Real-world logs, fallback classifier"
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    body = (f"{head}\n\nMeasured {stamp}, `python bench/classifier.py --write` (every signature rule's verdict ignored; "
            f"the first error\nline of each case and up to two error lines of its block, classified only by wording):\n\n{text}\n")
    realworld.replace_measurement(head, body)  # the section's history (its "History" paragraph on) stays

if __name__ == "__main__":
    sys.exit(main())
