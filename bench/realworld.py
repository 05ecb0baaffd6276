"""Score `msdoctor logs` on the real-world corpus in tests/realworld/logs/.

Each case is a folder with the log text a real user pasted in a public thread (copied exactly) and a
SOURCE.md whose header says where it comes from and what msdoctor must answer::

    # <short title>
    source: https://...
    date: 2024-05-17
    project: MindFormers
    cause: what the thread established, or "unresolved"
    expect.category: COMM            (the rule area of the right diagnosis)
    expect.rules: COMM060, COMM002   (optional: any of these as the headline)
    expect.rank: 3                   (optional: the culprit rank, or "none")
    expect.values: 16, 8             (optional: values the headline message must carry)

The headline is the root cause of `msdoctor logs --json` (its rule), else the first error finding,
else the first warning. A case is

* found       the headline is of the expected category (and rule, rank and values where given);
* partial     the headline is of the expected category but not the expected rule/rank/values, or
              no headline but a finding of the expected category;
* misleading  the headline is of another category;
* missed      no finding at all.

    python bench/realworld.py [--write] [--verbose] [CASE...]

prints one line per case, the figure per category, and with --write replaces the "Real-world logs"
section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "realworld" / "logs"
RESULTS = ROOT / "bench" / "RESULTS.md"
STATUSES = ("found", "partial", "misleading", "missed")


@dataclass
class Case:
    name: str
    path: Path
    meta: dict[str, str]
    category: str
    rules: list[str] = field(default_factory=list)
    rank: int | None = None
    values: list[str] = field(default_factory=list)


@dataclass
class Score:
    case: Case
    status: str
    headline: str | None
    headline_rank: int | None
    why: str
    rc: int


def area(rule: str | None) -> str | None:
    m = re.match(r"[A-Z]+", rule or "")
    return m.group(0) if m else None


def load_case(path: Path) -> Case:
    meta: dict[str, str] = {}
    for line in (path / "SOURCE.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([a-z][a-z_.]*):\s*(.*?)\s*$", line)
        if m:
            meta.setdefault(m.group(1), m.group(2))
    category = meta.get("expect.category", "").strip().upper()
    if not category:
        raise ValueError(f"{path}/SOURCE.md: no expect.category")
    rules = [r.strip() for r in meta.get("expect.rules", "").split(",") if r.strip()]
    rank_text = meta.get("expect.rank", "").strip().lower()
    rank = int(rank_text) if rank_text.isdigit() else None
    values = [v.strip() for v in meta.get("expect.values", "").split(",") if v.strip()]
    return Case(path.name, path, meta, category, rules, rank, values)


def cases(names: list[str] | None = None) -> list[Case]:
    out = []
    for p in sorted(CORPUS.iterdir()) if CORPUS.is_dir() else []:
        if (p / "SOURCE.md").is_file() and (not names or p.name in names):
            out.append(load_case(p))
    return out


def run_logs(path: Path) -> tuple[int, dict]:
    """`msdoctor logs --json PATH` in process (the corpus is scored in the test suite too)."""
    from msdoctor.cli import main

    raw = io.BytesIO()  # print_json writes bytes to sys.stdout.buffer
    out, err = io.TextIOWrapper(raw, encoding="utf-8"), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["logs", "--json", str(path)])
    out.flush()
    try:
        return rc, json.loads(raw.getvalue() or b"{}")
    except ValueError:
        return rc, {}


def headline(report: dict) -> tuple[str | None, int | None, str]:
    rc = report.get("root_cause") or {}
    if rc.get("rule"):
        return rc["rule"], rc.get("rank"), str(rc.get("message") or "")
    findings = report.get("findings") or []
    for sev in ("error", "warning"):
        for f in findings:
            if f.get("severity") == sev:
                return f.get("rule"), f.get("rank"), str(f.get("message") or "")
    return None, None, ""


def score(case: Case) -> Score:
    rc, report = run_logs(case.path)
    rule, rank, message = headline(report)
    areas = {area(f.get("rule")) for f in report.get("findings") or []}
    if rule is None:
        if case.category in areas:
            return Score(case, "partial", None, None, "no headline; category among info findings", rc)
        return Score(case, "missed", None, None, "no finding", rc)
    if area(rule) != case.category:
        return Score(case, "misleading", rule, rank, f"headline {rule} is not {case.category}", rc)
    problems = []
    if case.rules and rule not in case.rules:
        problems.append(f"rule {rule} not in {case.rules}")
    if case.rank is not None and rank != case.rank:
        problems.append(f"rank {rank} != {case.rank}")
    missing = [v for v in case.values if v not in message]
    if missing:
        problems.append(f"message lacks {missing}")
    if problems:
        return Score(case, "partial", rule, rank, "; ".join(problems), rc)
    return Score(case, "found", rule, rank, "", rc)


def summarise(scores: list[Score]) -> str:
    total = Counter(s.status for s in scores)
    per_cat: dict[str, Counter[str]] = defaultdict(Counter)
    for s in scores:
        per_cat[s.case.category][s.status] += 1
    n = len(scores) or 1
    lines = [
        f"{len(scores)} cases: " + ", ".join(f"{total[k]} {k}" for k in STATUSES)
        + f" — right category {100 * (total['found'] + total['partial']) / n:.0f} %"
        + f", fully found {100 * total['found'] / n:.0f} %",
        "",
        "| category | cases | found | partial | misleading | missed |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for cat in sorted(per_cat):
        c = per_cat[cat]
        lines.append(f"| {cat} | {sum(c.values())} | " + " | ".join(str(c[k]) for k in STATUSES) + " |")
    return "\n".join(lines)


def write_results(text: str, corpus: Path | None = None) -> None:
    import datetime as _dt

    head = "## Real-world logs (`bench/realworld.py`)"
    where = "`tests/realworld/logs/`" if corpus is None else f"`{corpus}` (`--corpus`)"
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = (
        f"{head}\n\nMeasured {when}: `msdoctor logs --json` on every case of {where} (log text pasted by real "
        "users in public threads; each case's SOURCE.md gives the thread and the expected verdict). "
        "Right category = found + partial.\n\n" + text + "\n"
    )
    replace_measurement(head, body)


def replace_measurement(head: str, body: str) -> None:
    """Put ``body`` (the section's heading, its stamp, the score line and the table) in place of the measurement of
    the bench/RESULTS.md section that starts with ``head``; the history written under its first table stays (a
    rewrite once dropped the first blind batches). A section not there yet is appended."""
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmarks\n"
    m = re.compile(re.escape(head) + r".*?(?=\n## |\Z)", re.S).search(old)
    if m is None:
        RESULTS.write_text(old.rstrip("\n") + "\n\n" + body, encoding="utf-8")
        return
    lines = m.group(0).split("\n")
    end = next((i for i, ln in enumerate(lines) if ln.startswith("| category")), len(lines))
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    rest = "\n".join(lines[end:]).strip("\n")
    section = body.rstrip("\n") + ("\n\n" + rest if rest else "")
    RESULTS.write_text(old[: m.start()] + section + old[m.end() :], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--write", action="store_true", help="replace the section in bench/RESULTS.md")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--corpus", type=Path, default=None, help="score the cases of another folder (default: tests/realworld/logs)")
    ap.add_argument("--clear-gaps", action="store_true",
                    help="remove the expect.gap marker of every case that is now found (after an engine change)")  # fmt: skip
    args = ap.parse_args(argv)
    global CORPUS
    default = CORPUS
    if args.corpus is not None:
        CORPUS = args.corpus
    scores = [score(c) for c in cases(args.cases)]
    for s in scores:
        if args.verbose or s.status != "found":
            print(f"{s.status:10} {s.case.name:45} {s.case.category:5} headline={s.headline} "
                  f"rank={s.headline_rank} {s.why}")
    text = summarise(scores)
    print(text)
    cleared = [sc.case for sc in scores if sc.status == "found" and sc.case.meta.get("expect.gap")]
    if cleared:
        print(f"{len(cleared)} case(s) marked expect.gap are now found" + ("" if args.clear_gaps else " (--clear-gaps removes the markers)"))
        if args.clear_gaps:
            for c in cleared:
                src = c.path / "SOURCE.md"
                kept = [ln for ln in src.read_text(encoding="utf-8").splitlines(keepends=True) if not ln.startswith("expect.gap:")]
                src.write_text("".join(kept), encoding="utf-8")
    if args.write:
        write_results(text, None if CORPUS == default else CORPUS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
