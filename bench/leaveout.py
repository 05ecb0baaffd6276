"""Leave-out: what heads a corpus case when the rule written for it is missing (a first-sighting estimate).

The corpus scores 100 % because its rules were written from it; a blind round (a log no rule was written for)
scores far less, and a blind round holds ~60 cases. This bench asks the blind question of every corpus case
(`tests/realworld/logs/*`, scored as `bench/realworld.py` scores): it runs the case once as `msdoctor logs --json`
does, then switches OFF the rules that head it today — the headline rule and every rule of its `expect.rules` —
and runs it again. What heads then is what a first sighting of that fault would get:

* found/partial  the new headline is of the expected category (another rule of the area, the keyword or wording
                 fallback of the right area, or an info finding of the area with no headline);
* misleading     the new headline is of another category — the rule that heads is named: "who misleads when the
                 right rule is missing";
* missed         no finding at all ("better missed than misleading").

The code-family rules (NUM030, ENV050, COMM080, MEM040, PERF010) and the fallbacks (X099, X097) are never switched
off: they read every code of their family from data (`msdoctor/data/cann_codes.toml`), or every error no rule knows,
so a first sighting has them too (before round 49 the fallbacks were switched off for the cases they head, which
counted ~40 cases as missed that a first sighting gets right); an exact code whose
listed rule is off goes to its family's rule, as an unlisted code of the family would (107002 → ENV050 when ENV082 is
off). A case a family rule heads, with no other expected rule, has nothing switched off: the summary gives the figure
with and without those cases.

`--keep-coded` keeps on, for a case, the rules that `msdoctor/data/cann_codes.toml` routes an exact code of the
case's log to (EI0004 → RT009, 107002 → ENV082): that routing is the documented code table, not a rule written for
the case, and a real first sighting of the documented code meets it. Without the option those rules are switched
off like any other, and a case whose documented code routes to its headline rule goes to the family's rule
(EI0004 → COMM080), which no real log gets: a lower bound. The two figures bracket the first-sighting rate.

A rule and its twin (`twin_of`: PAR001 and NUM096, the same lines read PAR or NUM by whether the job names a parallel
layout) are switched off together: a case headed by one has neither on a first sighting.

Switching off is done in the worker process on the catalogue every reader shares (`load_catalogue()`'s cached
object): its rules are filtered and its signature set rebuilt, so a code-family rule (NUM030, ENV050, …) takes a
code back when the specific rule that knew it is off, exactly as on a log no rule knew.

    python bench/leaveout.py [--jobs N] [--top N] [--save FILE] [--corpus DIR] [--verbose] [--keep-coded] [CASE ...]

prints the figure per category, then the rules that head wrongly with the number of cases and example names.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realworld  # noqa: E402  (bench/realworld.py: the corpus loader, `run_logs`, `headline`, `area`)

RIGHT = ("found", "partial")


@dataclass
class Outcome:
    case: str
    category: str
    before: str | None  # today's headline rule
    off: list[str]  # the rules switched off
    status: str  # found / partial / misleading / missed, with the rules off
    after: str | None  # the headline with the rules off


def judge(category: str, report: dict) -> tuple[str, str | None]:
    """The leave-out verdict of one report: right area (found/partial), misleading, or missed — the expected rule is
    off, so `found` means a headline of the right category, and `partial` an info-only finding of it."""
    rule, _rank, _msg = realworld.headline(report)
    if rule is None:
        areas = {realworld.area(f.get("rule")) for f in report.get("findings") or []}
        return ("partial" if category in areas else "missed"), None
    return ("found" if realworld.area(rule) == category else "misleading"), rule


_FULL: dict | None = None


def _switch_off(off: set[str]) -> None:
    """Make the shared catalogue lack ``off`` (an empty set restores it)."""
    global _FULL
    from msdoctor.checks import run_faults
    from msdoctor.engine.catalogue import load_catalogue

    cat = load_catalogue()
    if _FULL is None:
        from msdoctor.engine.evaluate import signature_set
        from msdoctor.facts.logstate import ScanSpec

        _FULL = {"rules": dict(cat._rules), "sigs": signature_set(cat), "twins": cat.twins()}
        for paste in (False, True):  # build both pre-filters once, to hand them on
            ScanSpec(_FULL["sigs"], paste=paste)
    cat._rules = {k: v for k, v in _FULL["rules"].items() if k not in off}
    if off:
        sigs = _without(_FULL["sigs"], off)
        # The byte pre-filter of the full set (a superset of the reduced set's: a line it lets through that no
        # rule of the reduced set matches is read as on a log without those rules, save that a line holding only
        # an off rule's anchor and no generic marker is looked at): compiling it again costs ~2 s a case.
        sigs.derived.update((k, v) for k, v in _FULL["sigs"].derived.items() if k[0] == "prefilter")
        cat._signature_set = sigs  # type: ignore[attr-defined]
    else:
        cat._signature_set = _FULL["sigs"]  # type: ignore[attr-defined]
    run_faults._signatures.cache_clear()
    _route_to_family(off)


def _family() -> frozenset[str]:
    """The code-family rules (NUM030, ENV050, COMM080, MEM040, PERF010) and the fallbacks (X099 keyword, X097
    word guess): never switched off. They are not written for a case but read every code of their family from
    data, or every error no rule knows, so a first sighting has them too; with a family rule off, its codes would
    go to whichever other family rule shares the pattern (E19010 → COMM080), a verdict no real log gets, and with
    a fallback off a case it heads would count as missed when a first sighting gets exactly that fallback. A case
    they head keeps its verdict unless its expect.rules name another rule."""
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.codes import family_rules

    fallbacks = {r.id for r in load_catalogue().select(kind="check") if r.id.endswith(("099", "097"))}
    return family_rules() | frozenset(fallbacks)


def _route_to_family(off: set[str]) -> None:
    """An exact code whose listed rule is off (107002 → ENV082) goes to its family's rule, as an unlisted code of the
    family would (`msdoctor.engine.codes.lookup`, read at call time by the routing, answers so while ``off`` is off)."""
    import dataclasses

    from msdoctor.engine import codes

    real = _FULL.setdefault("lookup", codes.lookup)  # type: ignore[union-attr]
    if not off:
        codes.lookup = real
        return
    d = codes._data()
    fams = {**d.get("families", {}), **d.get("acl_families", {})}

    def lookup(code: str) -> Any:
        info = real(code)
        if info is not None and info.rule in off:
            fam = fams.get(info.family) or {}
            info = dataclasses.replace(info, rule=str(fam.get("rule") or info.rule), known=False)
        return info

    codes.lookup = lookup


def _without(full: Any, off: set[str]) -> Any:
    """The full signature set less the rules ``off``, as `SignatureSet(...)` of the remaining rules builds it
    (its constructor reads every rule's text for the codes it knows: ~0.3 s a case on a loaded host)."""
    sigs = copy.copy(full)
    sigs.entries = [e for e in full.entries if e[0].id not in off]
    sigs._unanchored = [(r, sg) for r, sg in full._unanchored if r.id not in off]
    sigs._by_anchor = {}
    for a, lst in full._by_anchor.items():
        kept = [(r, sg) for r, sg in lst if r.id not in off]
        if kept:
            sigs._by_anchor[a] = kept
    sigs._digit_anchors = [a for a in full._digit_anchors if a in sigs._by_anchor]
    sigs._plain_anchors = [a for a in full._plain_anchors if a in sigs._by_anchor]
    sigs._cache = {}
    sigs._by_id = {k: v for k, v in full._by_id.items() if k not in off}
    sigs._family = frozenset(full._family - off)
    sigs.generic_ids = frozenset(full.generic_ids - off)
    sigs._knows = {k: v for k, v in full._knows.items() if k not in off}
    sigs.derived = {}
    return sigs


def coded_rules(case_dir: Path) -> frozenset[str]:
    """The rules the code table routes an exact code of this case's log to (a listed code whose rule is not a
    code-family rule; `msdoctor.engine.codes.lookup`): what `--keep-coded` leaves on. The codes are found with the
    engine's own code grammar (`msdoctor.engine.evaluate._CODE_RE`)."""
    from msdoctor.engine.codes import family_rules, lookup
    from msdoctor.engine.evaluate import _CODE_RE

    generic = family_rules()
    found: set[str] = set()
    for f in sorted(case_dir.iterdir()):
        if f.name == "SOURCE.md" or not f.is_file():
            continue
        for code in set(_CODE_RE.findall(f.read_text(encoding="utf-8", errors="replace"))):
            info = lookup(code)
            if info is not None and info.known and info.rule not in generic:
                found.add(info.rule)
    return frozenset(found)


def _with_twins(rules: set[str]) -> set[str]:
    """A rule and its twin are one rule in two areas (the same lines, PAR where the job names a parallel layout and
    NUM where it does not: `twin_of`): a case whose headline is one of them has neither on a first sighting."""
    from msdoctor.engine.catalogue import load_catalogue

    pairs = (_FULL or {}).get("twins") or load_catalogue().twins()
    return rules | {t for s, t in pairs.items() if s in rules} | {s for s, t in pairs.items() if t in rules}


def leave_out(args: tuple[str, str, list[str], bool]) -> Outcome:
    """One case: today's headline, then the headline with it and the case's expected rules switched off (less the
    rules its documented codes route to, with ``keep_coded``)."""
    path, category, expected, keep_coded = args
    _switch_off(set())
    _rc, report = realworld.run_logs(Path(path))
    before, _rank, _msg = realworld.headline(report)
    keep = _family() | (coded_rules(Path(path)) if keep_coded else frozenset())
    off = sorted(_with_twins({*expected, *([before] if before else [])}) - keep)
    _switch_off(set(off))
    try:
        _rc, report = realworld.run_logs(Path(path))
    finally:
        _switch_off(set())
    status, after = judge(category, report)
    return Outcome(Path(path).name, category, before, off, status, after)


def measure(cases: list[realworld.Case], jobs: int, keep_coded: bool = False) -> list[Outcome]:
    work = [(str(c.path), c.category, list(c.rules), keep_coded) for c in cases]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as ex:
            return list(ex.map(leave_out, work, chunksize=16))
    return [leave_out(w) for w in work]


def summarise(outs: list[Outcome], top: int = 25) -> str:
    total = Counter("right" if o.status in RIGHT else o.status for o in outs)
    per_cat: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outs:
        per_cat[o.category]["right" if o.status in RIGHT else o.status] += 1
    n = len(outs) or 1
    lines = [
        f"{len(outs)} cases, headline rule and expect.rules switched off: "
        f"{total['right']} right area ({100 * total['right'] / n:.0f} %), "
        f"{total['misleading']} misleading ({100 * total['misleading'] / n:.0f} %), "
        f"{total['missed']} missed ({100 * total['missed'] / n:.0f} %)",
    ]
    kept = [o for o in outs if not o.off]
    if kept:
        k = Counter("right" if o.status in RIGHT else o.status for o in kept)
        lines.append(f"(of which {len(kept)} headed by a code-family or fallback rule with no other expected rule: nothing switched "
                     f"off, {k['right']} right area, {k['misleading']} misleading — without them "
                     f"{total['right'] - k['right']} right area, {total['misleading'] - k['misleading']} misleading, "
                     f"{total['missed'] - k['missed']} missed of {len(outs) - len(kept)})")
    lines += [
        "",
        "| category | cases | right area | misleading | missed |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for cat in sorted(per_cat):
        c = per_cat[cat]
        lines.append(f"| {cat} | {sum(c.values())} | {c['right']} | {c['misleading']} | {c['missed']} |")
    mis: dict[str, list[Outcome]] = defaultdict(list)
    for o in outs:
        if o.status == "misleading" and o.after:
            mis[o.after].append(o)
    lines += ["", f"Who misleads when the right rule is missing ({len(mis)} rules):", "",
              "| rule | misleading heads | case areas | examples |", "| --- | ---: | --- | --- |"]
    for rule, recs in sorted(mis.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]:
        areas = Counter(o.category for o in recs)
        names = ", ".join(o.case[:50] for o in recs[:3]) + (f", … (+{len(recs) - 3})" if len(recs) > 3 else "")
        lines.append(f"| {rule} | {len(recs)} | " + " ".join(f"{a}:{k}" for a, k in areas.most_common())
                     + f" | {names} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--save", type=Path, help="write one record per case as JSON (to diff a before and an after)")
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--verbose", "-v", action="store_true", help="print every misleading case")
    ap.add_argument("--keep-coded", action="store_true",
                    help="leave on the rules the code table routes an exact code of the case's log to")
    args = ap.parse_args(argv)
    if args.corpus is not None:
        realworld.CORPUS = args.corpus
    t0 = time.monotonic()
    outs = measure(realworld.cases(args.cases or None), args.jobs, args.keep_coded)
    if args.verbose:
        for o in outs:
            if o.status == "misleading":
                print(f"misleading {o.case:60} {o.category:5} {o.before} off={','.join(o.off)} -> {o.after}")
    print(summarise(outs, args.top))
    print(f"\n({time.monotonic() - t0:.0f} s, {args.jobs} jobs)")
    if args.save:
        args.save.write_text(json.dumps([o.__dict__ for o in outs], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
