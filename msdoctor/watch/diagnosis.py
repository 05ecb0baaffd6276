"""Live diagnosis as a pure function: a run's facts (and what its supervisor named) → the verdict.

``report``, ``watch`` and the supervisor's closing report call :func:`diagnose`; the supervisor
itself only polls, writes, signals, stops and runs hooks (:mod:`msdoctor.watch.supervisor`).
Nothing here reads a file, looks at the clock or sends a signal.

What the supervisor named while the job ran is kept: a rule it named (``findings.jsonl`` folded,
retractions applied) is reported as it named it, because it judged with the processes alive — a
post-mortem pass sees a stall cut short by the kill, or peers that since died of their own collective
time-out. Rules the supervisor never named are judged post-mortem over every event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from msdoctor.engine.catalogue import Rule, load_catalogue
from msdoctor.engine.evaluate import run_checks
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Finding, NotEvaluated, sort_findings
from msdoctor.engine.rootcause import Consequence, RootCause

FindingKey = tuple[str, Any]


@dataclass
class Diagnosis:
    findings: list[Finding]
    not_evaluated: list[NotEvaluated]
    timeline: list[dict[str, Any]]
    root_cause: RootCause
    ranks: list[dict[str, Any]]
    skipped: list[str] = field(default_factory=list)
    coverage: dict[str, Any] = field(default_factory=dict)  # what was read (set by the reader)

    def extra(self, run_dir: str) -> dict[str, Any]:
        """What a report adds to the findings (JSON): ranks, first anomaly per rank, root cause, skipped."""
        return {
            "run_dir": run_dir,
            "ranks": self.ranks,
            "timeline": self.timeline,
            "root_cause": self.root_cause.to_dict(),
            "skipped": self.skipped,
            "coverage": self.coverage,
        }


def live_rules() -> list[Rule]:
    return load_catalogue().select(source="run", kind="check")


def merge(post: list[Finding], live: Mapping[FindingKey, Mapping[str, Any]]) -> tuple[list[Finding], list[str]]:
    """The post-mortem findings, with every finding the supervisor named kept as it named it.

    A rule the supervisor named is taken from ``live`` (its post-mortem re-judgement never replaces a
    rank named live; it only adds ranks when it names every live one too); the other rules come from
    the post-mortem pass. Returns (findings, malformed live keys).
    """
    out: dict[FindingKey, Finding] = {}
    bad: list[str] = []
    for key, d in live.items():
        try:
            out[key] = Finding.from_dict(dict(d))
        except (KeyError, ValueError, TypeError, AttributeError):
            bad.append(f"finding {key} malformed, skipped")
    named = {k[0] for k in out}
    post_keys = {(f.rule, f.rank) for f in post}
    for f in post:
        if f.rule not in named:
            out.setdefault((f.rule, f.rank), f)
            continue
        # a rule the supervisor named: the post-mortem pass may add ranks (a peer's exception that came
        # after the supervisor's last poll) when it agrees with every rank named live — never replace them
        live_keys = {k for k in out if k[0] == f.rule}
        if f.rank is not None and live_keys <= post_keys:
            out.setdefault((f.rule, f.rank), f)
    return sort_findings(list(out.values())), bad


def diagnose(facts: Facts, live: Mapping[FindingKey, Mapping[str, Any]] | None = None,
             rules: list[Rule] | None = None) -> Diagnosis:  # fmt: skip
    """Evaluate the live rules over ``facts`` and merge what the supervisor named (pure)."""
    ev = run_checks(rules if rules is not None else live_rules(), facts)
    findings, bad = merge(ev.findings, live or {})
    named = {f.rule for f in findings}
    not_evaluated = [n for n in ev.not_evaluated if n.rule not in named]
    return Diagnosis(
        findings=findings,
        not_evaluated=not_evaluated,
        timeline=timeline(findings),
        root_cause=root_cause(findings),
        ranks=ranks_summary(facts.get_known("run.ranks") or {},
                            stopped=bool((facts.get_known("run.job") or {}).get("stopped_by_supervisor"))),
        skipped=bad,
    )


def _role(f: Finding) -> str:
    role = f.data.get("role")
    if isinstance(role, str):
        return role
    rule = load_catalogue().get(f.rule)
    return rule.role if rule is not None else "root"


def _when(f: Finding) -> tuple[float, float]:
    step = float(f.step) if isinstance(f.step, int) else math.inf
    t = f.data.get("t") or f.data.get("first_seen")
    return step, float(t) if isinstance(t, (int, float)) else math.inf


def timeline(findings: list[Finding]) -> list[dict[str, Any]]:
    """The first anomaly of each rank (by step, then time), in the order they appeared."""
    first: dict[int, Finding] = {}
    for f in findings:
        if f.rank is None:
            continue
        cur = first.get(f.rank)
        if cur is None or _when(f) < _when(cur):
            first[f.rank] = f
    rows = [
        {"rank": r, "step": f.step, "t": f.data.get("t"), "rule": f.rule, "role": _role(f), "message": f.message}
        for r, f in first.items()
    ]
    return sorted(rows, key=lambda d: (d["step"] if d["step"] is not None else math.inf, d["t"] or math.inf, d["rank"]))


def root_cause(findings: list[Finding]) -> RootCause:
    """The most severe, earliest finding whose role is a root (consequences never are).

    A hung rank the supervisor named stays the root cause when its peers later fail of their own
    collective time-out: their exceptions (later than its last progress) are its consequences.
    """
    roots = [f for f in findings if _role(f) == "root"]
    if not roots:
        why = "no finding names a root cause" if findings else "no findings: nothing to correlate"
        return RootCause.undetermined(why)
    best = min(roots, key=lambda f: (f.severity.rank_order, *_when(f)))
    hung = best.rule == HANG_RULE and best.rank is not None

    def follows(f: Finding) -> bool:
        if f is best:
            return False
        if _role(f) == "consequence" or (f.rule == best.rule and f.rank != best.rank):
            return True
        # the peers of a hung rank fail of their collective time-out (or are killed by the launcher)
        return hung and f.rank is not None and f.rank != best.rank and _when(f) >= _when(best)

    consequences = [Consequence(rank=f.rank, rule=f.rule, message=f.message) for f in findings if follows(f)]
    return RootCause.from_finding(best, consequences=consequences)


HANG_RULE = "COMM201"


def ranks_summary(ranks: Mapping[str, Mapping[str, Any]], stopped: bool = False) -> list[dict[str, Any]]:
    """One row per rank from ``run.ranks``: status (ok / failed / running / vanished / stopped — by the
    supervisor — / unknown), last step."""
    out = []
    for k, r in sorted(ranks.items(), key=lambda kv: int(kv[0])):
        if r.get("ended") is not None:
            status = r.get("end_status") or "ended"
        elif r.get("alive"):
            status = "running"
        elif r.get("alive") is False:
            status = "stopped" if stopped else "vanished"
        else:
            status = "unknown"
        out.append({"rank": int(k), "status": status, "last_step": r.get("last_step"), "phase": r.get("phase")})
    return out
