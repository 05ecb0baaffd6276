"""Cross-area fire: which rules find something in real cases of ANOTHER area.

A blind verdict is misleading when a rule of the wrong area heads the report. That happens on an unseen log when
the right rule is missing and an over-broad one matches a line it was not written for — a consequence of another
fault, another area's message that shares a word or a code. This bench finds those rules before a blind round
does: for every corpus case (`tests/realworld/logs/*`, its `expect.category` in SOURCE.md) it runs the scan as
`msdoctor logs --json` does (`bench/realworld.py`'s `run_logs`) and counts, per rule, the error and warning
findings whose area differs from the case's category — headline or not. Info findings never head a report and
are not counted; nor are check rules (ids 1xx-5xx: a missing-rank or throughput check is not a signature).

A cross-area finding is not always wrong: a log may hold two faults (an OOM, then the HCCL time-out it caused on
the other ranks). The table is where to look, not a verdict: a rule that fires in many other-area cases, on lines
that are a consequence or another fault, is the one most likely to mislead when the right rule is missing.

    python bench/crossfire.py [--top N] [--lines RULE ...] [--save FILE] [--jobs N] [--corpus DIR] [CASE ...]

prints the total (cross-area findings, cases with one, rules with one), then the top rules by cross-area
findings with the areas and names of the cases; `--lines RULE` prints, for those rules, every evidence line they
matched in another area's case; `--save FILE` writes the per-rule counts as JSON (to diff a before and an after).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realworld  # noqa: E402  (bench/realworld.py: the corpus loader and the in-process `msdoctor logs --json`)

SEVERITIES = ("error", "warning")
RULES = Path(__file__).resolve().parent.parent / "rules"


def roles() -> dict[str, str]:
    """Rule id → role (`root`, `consequence`, …): a consequence rule heads a report only when no root one fires."""
    import tomllib

    out = {}
    for f in RULES.glob("*/*.toml"):
        with f.open("rb") as fh:
            doc = tomllib.load(fh)
        out[str(doc.get("id"))] = str(doc.get("role", "root"))
    return out


def is_signature_rule(rule: str) -> bool:
    """A log rule (001-099, the keyword fallback X099 included) rather than a check rule (101-599)."""
    m = re.match(r"[A-Z]+(\d+)$", rule)
    return bool(m) and int(m.group(1)) < 100


def scan(case_path: str) -> tuple[str, list[dict]]:
    """The error/warning findings of one case: rule, severity, headline or not, evidence lines."""
    _rc, report = realworld.run_logs(Path(case_path))
    head, _rank, _msg = realworld.headline(report)
    out = []
    for f in report.get("findings") or []:
        rule = f.get("rule") or ""
        if f.get("severity") not in SEVERITIES or not is_signature_rule(rule):
            continue
        lines = [(e.get("line"), str(e.get("text") or "")[:240]) for e in f.get("evidence") or []]
        out.append({"rule": rule, "severity": f.get("severity"), "headline": rule == head, "lines": lines})
    return case_path, out


def measure(cases: list[realworld.Case], jobs: int) -> dict[str, list[dict]]:
    """Per rule, one record per other-area case it fired in."""
    by_path = {str(c.path): c for c in cases}
    per_rule: dict[str, list[dict]] = defaultdict(list)
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as ex:
            results = list(ex.map(scan, by_path, chunksize=8))
    else:
        results = [scan(p) for p in by_path]
    for path, findings in results:
        case = by_path[path]
        for f in findings:
            if realworld.area(f["rule"]) != case.category:
                per_rule[f["rule"]].append({"case": case.name, "category": case.category, **f})
    return per_rule


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--lines", nargs="*", default=[], metavar="RULE", help="print the matched lines of these rules")
    ap.add_argument("--save", type=Path, help="write the per-rule records as JSON")
    ap.add_argument("--jobs", "-j", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.corpus is not None:
        realworld.CORPUS = args.corpus
    cases = realworld.cases(args.cases or None)
    per_rule = measure(cases, args.jobs)
    total = sum(len(v) for v in per_rule.values())
    heads = sum(1 for v in per_rule.values() for r in v if r["headline"])
    n_cases = len({r["case"] for v in per_rule.values() for r in v})
    print(f"{len(cases)} cases: {total} cross-area findings (error/warning, signature rules) in {n_cases} cases "
          f"from {len(per_rule)} rules; {heads} of them head the report (misleading)")
    print()
    role = roles()
    print("| rule | role | cross-area findings | as headline | errors | case areas | cases |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    ranked = sorted(per_rule.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for rule, recs in ranked[: args.top]:
        areas = Counter(r["category"] for r in recs)
        names = ", ".join(r["case"][:60] for r in recs[:4]) + (f", … (+{len(recs) - 4})" if len(recs) > 4 else "")
        print(f"| {rule} | {role.get(rule, '?')} | {len(recs)} | {sum(r['headline'] for r in recs)} | "
              f"{sum(r['severity'] == 'error' for r in recs)} | "
              + " ".join(f"{a}:{n}" for a, n in areas.most_common()) + f" | {names} |")
    for rule in args.lines:
        print(f"\n## {rule}")
        for r in per_rule.get(rule, []):
            for line, text in r["lines"]:
                print(f"  {r['category']:4} {r['severity'][:4]} {'HEAD' if r['headline'] else '    '} "
                      f"{r['case'][:70]}:{line}  {text}")
    if args.save:
        args.save.write_text(json.dumps({"total": total, "rules": per_rule}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
