"""`msdoctor logs PATH…`: the root cause across the logs of all ranks.

sources (log files of every rank) → facts (:mod:`msdoctor.facts.logs`) → the correlation rules
(COMM501–505, :mod:`msdoctor.checks.logs`) plus every signature rule of the catalogue → findings,
a per-rank timeline and the root-cause verdict.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from msdoctor.checks.logs import SETTING_RULES, first_unclassified
from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import finding_from_hit, run_checks
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Finding, Hit, Severity, sort_findings
from msdoctor.errors import ExitCode, UsageError
from msdoctor.facts.logs import EXIT_ONLY_RULES, KILL_RULE, LogScan, collect

MAX_EVIDENCE = 5
TIMELINE_ROWS = 12


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="log files or folders (msrun --log_dir, plog, GLOG dirs)")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="all evidence, full fix text, every rank")
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel scanning processes (default: one per core)")
    p.add_argument("--engine", choices=("auto", "python"), default="auto",
                   help="line pre-filter: grep when installed (auto), or Python's re only")  # fmt: skip
    p.add_argument("--dump-facts", metavar="FILE", help="also write the collected facts snapshot to FILE")
    p.add_argument("--facts", metavar="FILE", help="replay the correlation from a facts snapshot instead of logs")


def signature_findings(hits: list[dict[str, Any]]) -> list[Finding]:
    """One finding per signature rule from the ``logs.hits`` facts: a count, the ranks, the parsed values of
    the earliest line, the earliest lines as evidence. A hit of a rule this catalogue lacks is left out."""
    cat = load_catalogue()
    out: list[Finding] = []
    for h in hits:
        rule = cat.get(h["rule"])
        if rule is None or not h.get("firsts"):
            continue
        firsts = h["firsts"]
        ranks = list(h.get("ranks") or [])
        per_rank = h.get("per_rank") or {}
        evidence = tuple(Evidence(text=f["text"], file=f.get("file"), line=f.get("line")) for f in firsts[:MAX_EVIDENCE])
        where = f"on rank(s) {_short(ranks)}" if ranks else ("in one process" if h.get("one_file") else "in launcher/scheduler logs")
        first = firsts[0]
        groups = first.get("groups") or {}
        info = _code(groups)
        rank = ranks[0] if len(ranks) == 1 and "launcher" not in per_rank else first.get("prank")
        faulty = str(groups.get("faulty_rank") or "")
        if faulty.isdigit():  # the message names the rank at fault (`… waiting for send/recv from rank 0. Please check
            rank = int(faulty)  # rank 0 logs for faulty rank.`), not the rank whose log holds the line
        hit = Hit(
            message=describe(first, info, f"{h['count']} line(s) {where}"),
            evidence=evidence,
            rank=rank,
            step=_step_of(first),
            data={"ranks": ranks[:1000], "per_rank": dict(list(per_rank.items())[:1000]),
                  "role": first.get("role") or rule.role, "first_time": first.get("time"),
                  **({"groups": groups} if groups else {}), **({"cann": info.to_dict()} if info else {})},  # fmt: skip
        )
        f = finding_from_hit(rule, hit)
        if f.severity is Severity.ERROR and all(x.get("logged_as") for x in firsts):
            # every line of it was logged at WARNING by the program that wrote it: it did not stop the job by
            # itself, so an error line elsewhere heads the verdict before it
            f.severity = Severity.WARNING
            f.message += f" (logged at {firsts[0]['logged_as']} level)"
            f.data["logged_as"] = str(firsts[0]["logged_as"])
        if info is not None and info.rule == rule.id and info.fix:  # the code's own fix (or its family's) is more precise than
            # the generic rule's — unless the line's words moved the code to another rule (SUPPORT_LIMIT_RE)
            f.fix = f"{info.fix} Confirm: {info.confirm}".strip()
        f.count = int(h["count"])
        out.append(f)
    return sort_findings(out)


VALUE_LABELS = {"other_codes": "also", "peer": "peer rank", "remote": "remote rank", "remote_rank": "remote rank", "node": "node",
                "nodes": "nodes", "device": "device", "port": "port", "ip": "IP", "step": "step", "op": "op",
                "size": "size", "free": "free", "shape": "shape",
                "unsupported": "the message says"}  # fmt: skip
STEP_RE = re.compile(r"\b[Ss]tep[:=\s\[]*(\d+)")


def _code(groups: Mapping[str, str]) -> Any:
    # set by a code-family rule only: a rule's own `code` group keeps its text
    from msdoctor.engine.codes import lookup_groups

    return lookup_groups(groups)


def _step_of(ev: Mapping[str, Any]) -> int | None:
    if ev.get("step") is not None:
        return int(ev["step"])
    g = (ev.get("groups") or {}).get("step")
    if g and str(g).isdigit():
        return int(g)
    m = STEP_RE.search(str(ev.get("text", "")))
    return int(m.group(1)) if m else None


def describe(ev: Mapping[str, Any], info: Any, tail: str) -> str:
    """What the line says, with the values the rule parsed: `EI0006 (HCCL): … — `quote`` (n lines …)."""
    from msdoctor.engine.codes import atb_code_in, dcmi_code_in, hccl_code_in, hccp_errno_in, mindie_code_in
    from msdoctor.facts.logformats import parse_line, strip_prefixes

    body = parse_line(strip_prefixes(str(ev.get("text", "")))[0]).message.strip()
    quote = body if len(body) <= 220 else body[:219] + "…"
    groups = {k: v for k, v in (ev.get("groups") or {}).items() if k not in ("family_code", "cann_code", "acl_code", "cuda_error", "family_bare")}
    parts = []
    if info is not None:
        known = "" if info.known else f" (a code of the {info.family} family not listed by msdoctor)"
        parts.append(f"{info.code} ({info.component}): {info.meaning}{known}")
    hccl = hccl_code_in(str(ev.get("text", "")))
    shown = list(groups.items())[:8]  # a value only a later line gave comes last: room for it
    vals = ", ".join(f"{VALUE_LABELS.get(k, k)} {_hccl_value(k, v, hccl)}" for k, v in shown if str(v).strip())
    if hccl is not None and not any(k == "code" and str(v).strip() == str(hccl[0]) for k, v in shown):
        vals = ", ".join(x for x in (vals, f"HCCL code {hccl[0]} = {hccl[1]} ({hccl[2]})") if x)
    # the codes of the other tables a line gives, each named once after the values: the driver management code
    # (msdoctor/data/dcmi_result.toml), MindIE's code decoded by its fields (mindie_codes.toml), ATB's status
    # (atb_status.toml), HCCP's negative errno
    text = str(ev.get("text", ""))
    dcmi, mie, atb, hccp = dcmi_code_in(text), mindie_code_in(text), atb_code_in(text), hccp_errno_in(text)
    named = (f"DCMI code {dcmi[0]} = {dcmi[1]} ({dcmi[2]})" if dcmi else "", f"{mie[0]} = {mie[1]}" if mie else "",
             f"ATB status {atb[0]} = {atb[1]} ({atb[2]})" if atb else "",
             f"HCCP ret -{hccp[0]} = {hccp[1]} ({hccp[2]})" if hccp else "")
    vals = ", ".join(x for x in (vals, *named) if x)
    if vals:
        parts.append(vals)
    head = "; ".join(parts)
    return (f"{head} — `{quote}`" if head else f"`{quote}`") + f" ({tail})"


def _hccl_value(key: str, value: Any, hccl: tuple[int, str, str] | None) -> str:
    """A rule's `code` value with HcclResult's name when the line is about an HCCL call (`5` → `5 =
    HCCL_E_NOT_SUPPORT (not support feature)`; names from msdoctor/data/hccl_result.toml)."""
    if hccl is not None and key == "code" and str(value).strip() == str(hccl[0]):
        return f"{value} = {hccl[1]} ({hccl[2]})"
    return str(value)


def timeline(facts: Facts, verdict_states: Mapping[str, str]) -> list[dict[str, Any]]:
    """Per rank: first anomaly (time, rule), last progress (step, line), how the log ends."""
    rows = []
    for r, v in sorted((facts.get_known("logs.ranks") or {}).items(), key=lambda kv: int(kv[0])):
        fa, p = v.get("first_anomaly"), v.get("progress")
        rows.append({
            "rank": int(r),
            "first_anomaly": None if not fa else {k: fa.get(k) for k in ("time", "ts", "rule", "role", "file", "line", "text")},
            "last_progress": None if not p else {k: p.get(k) for k in ("step", "time", "ts", "file", "line", "text")},
            "last_time": v.get("last_time"),
            "ends": verdict_states.get(r, "silent"),
            "files": v.get("files", []),
        })  # fmt: skip
    for m in facts.get_known("logs.missing_ranks") or []:
        rows.append({"rank": m, "first_anomaly": None, "last_progress": None, "last_time": None, "ends": "missing", "files": []})
    return sorted(rows, key=lambda row: row["rank"])


ROLE_ORDER = {"root": 0, "consequence": 1}
PEER_KEYS = ("peer", "remote", "remote_rank", "node", "nodes", "dest_rank", "src_rank")


def _peer_keys(groups: Mapping[str, Any]) -> list[str]:
    """The values a line gives about the other end: `peer*` / `remote*` groups (rank, IP, server, device)
    and the nodes a launcher names."""
    return [k for k in groups if groups[k] and (k in PEER_KEYS or k.startswith(("peer", "remote")))]


def _is_correlation(f: Finding) -> bool:
    return bool(f.data.get("root_cause")) or "reason" in f.data


def headline_finding(findings: list[Finding]) -> Finding | None:
    """The signature finding that best explains the failure: errors before warnings, a root cause before a
    consequence (time-outs, msrun's "worker exited", "run task error" and the like are consequences), a
    specific rule before a generic code-family rule, then the earliest."""
    from msdoctor.checks.logs import BLOCK_GENERIC, TASK_TIMEOUT_RE, yields_to_task
    from msdoctor.engine.codes import family_rules

    generic = family_rules()
    cands = [f for f in findings if not _is_correlation(f) and f.severity.value in ("error", "warning")]
    if not cands:
        return None
    collective = any(f.rule.startswith("COMM") and f.data.get("role") == "consequence" for f in cands)

    # an error finding yields only to errors; a warning to the rules of its own severity too (Ray's worker-death
    # warning MEM069 to the title's `No module named 'vllm'` warning, ENV055)
    error_rules = [f.rule for f in cands if f.severity.value == "error"]
    all_rules = [f.rule for f in cands]

    def role(f: Finding) -> float:
        r = ROLE_ORDER.get(str(f.data.get("role")), 2)
        others = error_rules if f.severity.value == "error" else all_rules
        if r == 1 and yields_to_task(f.rule, others):
            return 1.25  # a model stream's 0x91 report wraps the failed task that a NUM rule describes
        if r == 0 and yields_to_task(f.rule, others):
            return 0.5  # a failing statement (CKPT029) under which another area's specific rule says what failed
        if collective and r == 0 and not f.rule.startswith("COMM") and any(TASK_TIMEOUT_RE.search(e.text) for e in f.evidence):
            return 1.5  # a device-task time-out beside a collective time-out is that collective's task
        return r

    def names_culprit(f: Finding) -> bool:
        return bool(_peer_keys(f.data.get("groups") or {}))

    # among equals, a line that names the rank/node it waited for says more (msrun's `Time out nodes are
    # ['3']` before `Scheduler process … exit with exception`)
    def first_line(f: Finding) -> tuple[str, int]:
        lines = [(e.file or "", e.line) for e in f.evidence if e.line is not None]
        return min(lines) if lines else ("", 1 << 62)

    # lines of one time stamp (a CANN block: its header line and the TraceBack lines that inherit its time)
    # are taken in file order — the header says what failed, later lines how it was reached — except that the
    # block's generic device-exception report yields to a rule that refines it (BLOCK_GENERIC, as a rank's root
    # event does in checks/logs.py::_most_specific)
    def weak_code(f: Finding) -> int:
        # a code the data does not list says only its family ("the runtime reported a failure"), as does a CUDA code
        # read from a number alone (`cuda error 710`); an internal catch-all (E*9999) less: they yield to any line a
        # rule read for what it says
        cann = f.data.get("cann") or {}
        return 2 if cann.get("internal") else (1 if cann and (not cann.get("known") or cann.get("bare")) else 0)

    return min(cands, key=lambda f: (f.severity.rank_order, weak_code(f), role(f),
                                     f.rule in generic, not names_culprit(f), f.data.get("first_time") or float("inf"),
                                     f.rule in BLOCK_GENERIC, first_line(f), f.rule))  # fmt: skip


def _named_culprit(f: Finding) -> list[str]:
    groups = f.data.get("groups") or {}
    named = [f"{k.replace('_', ' ')} {groups[k]}" for k in _peer_keys(groups)]
    if not named:
        return []
    return [f"the message itself names {', '.join(named)}: the fault may be there — this process's "
            f"{f.rule} can be a consequence of it; read that rank's log first"]  # fmt: skip


def root_cause(findings: list[Finding]) -> dict[str, Any]:
    """The verdict: the correlation across ranks where there is one, else (one process, or no rank
    structure) the headline signature finding: the first error, its rule, its fix — never "not
    determined" beside an error finding."""
    head = headline_finding(findings)
    for f in findings:
        rc = f.data.get("root_cause")
        if rc:
            sig = rc.get("signature")
            sigf = next((x for x in findings if x.rule == sig and not _is_correlation(x)), None)
            return {"rank": rc["rank"], "rule": sig if sigf else f.rule, "verdict": f.rule, "signature": sig,
                    "message": (f"{sigf.message}. " if sigf else "") + f.message,
                    "fix": (sigf or f).fix, "evidence": [e.to_dict() for e in f.evidence],
                    "consequences": rc.get("consequences", []), "chain": rc.get("chain", []),
                    **({"unclassified": True} if rc.get("unclassified") else {})}  # fmt: skip
        if "reason" in f.data and f.data.get("root_cause", "absent") is None:
            return {"rank": None, "reason": f.data["reason"], "rule": f.rule, "verdict": f.rule, "fix": f.fix}
    if head is not None:
        chain = _named_culprit(head)
        return {"rank": head.rank, "rule": head.rule, "verdict": "first-error", "signature": head.rule,
                "message": head.message, "fix": head.fix, "evidence": [e.to_dict() for e in head.evidence[:3]],
                "consequences": [], "chain": chain, "named_culprit": bool(chain)}  # fmt: skip
    return {"rank": None, "reason": "no rank ends in an error or a collective failure: nothing to correlate"}


def _area(rule: str | None) -> str:
    """The area the catalogue gives the rule (its `area` field), or "" for an id it does not hold."""
    r = load_catalogue().get(rule) if rule else None
    return r.area if r is not None else ""


# The verdicts that read an error (or a waiting process's dump) but name no cause: never a clean bill of health.
UNDIAGNOSED = ("unrecognised-error", "incomplete-traceback", "stack-dump")


def _headline_finding(rc: Mapping[str, Any], findings: list[Finding]) -> Finding | None:
    """The finding of the rule that heads the verdict ``rc``, or None."""
    return next((f for f in findings if f.rule == rc.get("rule")), None)


def _weak_headline(rc: Mapping[str, Any], findings: list[Finding]) -> bool:
    """The verdict is a first-error headline that is a consequence of something else (or a warning that is not
    a root cause, or an error rule's line that its own program logged at WARNING level): an error no rule knows,
    classified by its wording, says more. A warning rule that is a root cause (parameters not loaded, an
    overflow) keeps the headline: what fails after it may follow from it."""
    if rc.get("verdict") != "first-error":
        return False
    head = _headline_finding(rc, findings)
    if head is None:
        return False
    role = head.data.get("role")
    if head.data.get("logged_as"):
        return True  # an error rule's line its program logged as a warning: an error line after it says more
    return role == "consequence" or (head.severity.value == "warning" and role not in ("root", None))


def _consequence_after_unknown(rc: Mapping[str, Any], findings: list[Finding], facts: Facts) -> Finding | None:
    """The headline finding when it says less than a Python exception no rule recognises, in the same file, and no
    other rule read an error or a warning; else None. That is a consequence whose first line comes after the
    exception's, or a warning that heads only alone (``role = "info"``: a loopback transfer-engine host, a slow
    64-bit operator) wherever it is printed. (A root warning keeps the headline: what fails after it may follow.)"""
    head = _headline_finding(rc, findings)
    if head is None or not head.evidence or not facts.is_known("logs.ranks"):
        return None
    role = head.data.get("role")
    if role != "consequence" and not (role == "info" and head.severity is Severity.WARNING):
        return None
    if any(f.rule != head.rule and f.severity is not Severity.INFO for f in findings):
        return None  # another rule read an error or a warning: the verdict among them is the usual one
    e = first_unclassified(facts)
    first = head.evidence[0]
    if e is None or not e.get("frames") or e.get("file") != first.file:
        return None  # only a Python exception that ends its traceback (a CANN plog line is its own chain)
    if role == "consequence" and not int(e.get("line") or 0) < int(first.line or 0):
        return None  # a consequence printed first keeps the headline
    return head


def _as_context(findings: list[Finding], rules: frozenset[str] | set[str]) -> list[Finding]:
    """The findings of ``rules`` stepped down to info: context beside the error that heads the verdict."""
    return [dataclasses.replace(f, severity=Severity.INFO) if f.rule in rules else f for f in findings]


def run(args: argparse.Namespace) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    from msdoctor.checks.logs import (
        first_observed_failure,
        first_unclassified,
        frames_hint,
        incomplete_traceback,
        open_traceback,
        verdict,
        with_first_failure,
    )
    from msdoctor.report.render import exit_code, json_payload, print_json

    catalogue = load_catalogue()
    if bool(args.paths) == bool(args.facts):
        raise UsageError("give log PATHs or --facts FILE (one of them)")
    if args.facts:  # replay: every finding from the snapshot (the correlation and the signature hits)
        facts = Facts.load(args.facts, expect=("logs",))
        scan = LogScan(skipped=list(facts.get_known("logs.skipped") or []))
    else:
        facts, scan = collect(args.paths, catalogue, jobs=args.jobs, engine=args.engine)
    ev = run_checks(catalogue.select(source="log", kind="check"), facts)
    correlation = [f for f in ev.findings if f.data.get("root_cause") or "reason" in f.data]
    others = [f for f in ev.findings if f not in correlation]
    findings = correlation + sort_findings(others + signature_findings(facts.get_known("logs.hits") or []))
    states = verdict(facts, {}).get("states", {}) if facts.is_known("logs.ranks") else {}
    rows = timeline(facts, states)
    fallback = [f for f in findings if "fallback" in f.data]
    findings = [f for f in findings if f not in fallback]
    # The keyword fallback of an area whose wording proved unreliable on blind real logs (its X099 rule is info:
    # MEM, PAR, NUM, RT headlines were right 4 times in 12) never heads the verdict: it stays beside it as a
    # guess, as the word statistics' X097 does, and the error is said unrecognised.
    guesses = [f for f in fallback if f.severity is Severity.INFO]
    fallback = [f for f in fallback if f not in guesses]
    findings += guesses
    # a setting (ENV824's `export ASCEND_LAUNCH_BLOCKING=1`) is a cause only beside a failure it causes; without
    # one it is context (info), so the error beside it — known or not — heads the verdict
    present = {f.rule for f in findings if f.severity is not Severity.INFO}
    idle = {r for r in present & SETTING_RULES.keys() if not SETTING_RULES[r] & present}
    findings = _as_context(findings, idle)
    rc = root_cause(findings)
    if rc.get("rule") in EXIT_ONLY_RULES and facts.is_known("logs.ranks") and first_unclassified(facts) is not None:
        findings = _as_context(findings, EXIT_ONLY_RULES)
        rc = root_cause(findings)
    weak = weak_head = _weak_headline(rc, findings)
    if weak and not any(_area(f.rule) != _area(rc.get("rule")) for f in fallback):
        weak = False  # the error no rule knows is of the headline's own area: the specific rule says more
    if rc.get("unclassified") and fallback:
        # the rank that failed first did so with an error no rule knows: its wording names the area, the
        # correlation the rank (COMM502's own id would put a DATA or ENV error under COMM)
        fb = fallback[0]
        findings = [fb, *findings]
        rc = {"rank": rc.get("rank"), "rule": fb.rule, "verdict": "first-error", "signature": fb.rule,
              "message": fb.message, "fix": fb.fix, "evidence": [x.to_dict() for x in fb.evidence],
              "consequences": rc.get("consequences", []), "chain": rc.get("chain", []), "named_culprit": False,
              "classified_by": "wording"}  # fmt: skip
    # a consequence that heads only because the error printed before it is one no rule knows and whose wording
    # names no area (vllm-ascend #2723: TBE's `main process disappeared` at the exit of a server whose engine had
    # died of an unknown exception): that earlier error is what failed, the consequence goes beside it
    after = _consequence_after_unknown(rc, findings, facts) if weak_head and not fallback else None
    if after is not None:
        findings = _as_context(findings, {after.rule})
    if (rc.get("rule") is None or weak or after is not None) and facts.is_known("logs.ranks"):
        e = first_unclassified(facts)
        if e is not None and fallback:  # no rule knows it, but its wording names the area (X099, a warning)
            fb = fallback[0]  # (beside a headline that is only a warning or a consequence, the error says more)
            findings = [fb, *findings]
            rc = {"rank": fb.rank, "rule": fb.rule, "verdict": "first-error", "signature": fb.rule,
                  "message": fb.message, "fix": fb.fix, "evidence": [x.to_dict() for x in fb.evidence],
                  "consequences": [], "chain": [], "named_culprit": False, "classified_by": "wording"}  # fmt: skip
        elif e is not None and not weak:  # an error no rule knows is still the error: say it, with where it is
            rc = {"rank": e.get("prank"), "rule": None, "verdict": "unrecognised-error",
                  "reason": f"no rule recognises the error; the first one is `{e.get('text', '')[:200]}` "
                            f"({e.get('file')}:{e.get('line')})"}  # fmt: skip
            guess = next((f for f in findings if "guess" in f.data or "fallback" in f.data), None)
            if guess is not None:  # word statistics or keywords name an area: a hint for the reader, never the headline
                g = guess.data.get("guess") or guess.data["fallback"]
                words = [str(w) for w in (g.get("words") or g.get("keywords") or [])]
                rc["reason"] += (f"; its words ({', '.join(words[:4])}) are those of {g['area']} errors "
                                 f"(a guess, {guess.rule}: read the line and the {g['area']} rules)")  # fmt: skip
            hint = frames_hint([str(p) for p in e.get("frames") or []])
            if hint is not None:  # where it was raised: a hint for the reader, too weak for a verdict
                rc["reason"] += f"; it was raised in {hint[0]} code (`{hint[1]}`): a hint where to look, not a cause"
            if after is not None:
                if after.data.get("role") == "consequence":
                    rc["reason"] += f"; after it, {after.rule} (a consequence, not the cause)"
                else:
                    rc["reason"] += f"; beside it, {after.rule} (a warning, context rather than the cause)"
                rc["beside"] = after.rule
    undetermined = rc.get("rule") is None and rc.get("verdict") != "unrecognised-error"
    if (undetermined or (weak_head and rc.get("classified_by") != "wording")) and facts.is_known("logs.ranks"):
        # the only error is a traceback cut before its exception line (beside it at most a warning or a
        # consequence, which the missing exception may explain): say so rather than name what is not the error
        tb = open_traceback(facts)
        beside = rc if rc.get("rule") and rc.get("message") else None
        head = _headline_finding(rc, findings) if beside is not None else None
        if tb is not None and tb.get("dump") and head is not None and head.severity is Severity.ERROR:
            pass  # a dump (or a Ctrl-C) waits for no exception: the error rule that read its waiting frame heads
            # (DATA202, a DataLoader's wait); a warning beside it does not
        elif tb is not None:
            rc = incomplete_traceback(tb)
            if beside is not None:  # the error that was read is still said: a consequence, not the cause
                rc["reason"] += (f". Beside it, {beside['rule']} (a consequence or a warning, not the cause the "
                                 f"missing exception would name): {str(beside['message'])[:300]}")  # fmt: skip
                rc["beside"] = beside["rule"]
    first = first_observed_failure(facts)
    if first is not None:  # torchrun's failure summary: the culprit rank and how it ended (a signal)
        rc = with_first_failure(rc, first, KILL_RULE)
    if rc.get("rule") is None and rc.get("verdict") not in UNDIAGNOSED:
        rc = with_benign(rc, findings)
    if rc.get("rule") and rc.get("message"):
        # a message whose cause the threads often found elsewhere (a kernel code whose op package was older than
        # the framework): the rule's measured other causes go beside the verdict, never instead of it
        other = load_catalogue().get(str(rc["rule"]))
        if other is not None and other.other_causes:
            rc["other_causes"] = other.other_causes
    cov = coverage(facts, scan, rows)
    if args.dump_facts:  # the verdict is written beside the facts it was drawn from (consumers need not redo it)
        facts.set("logs.verdict", rc, "logs")
        facts.dump(args.dump_facts)
    if args.json:
        print_json(json_payload("logs", findings, ev.not_evaluated, root_cause=rc, timeline=rows, coverage=cov,
                                skipped=scan.skipped, files=facts.get_known("logs.files") or []))  # fmt: skip
    else:
        _render(findings, ev.not_evaluated, rc, rows, scan, args.verbose, cov)
    if rc.get("verdict") in UNDIAGNOSED:
        # an error was read but no rule names it (or its exception line is missing): not a clean bill of health
        return int(ExitCode.FINDINGS)
    if rc.get("verdict") == "first-error" and _root_warning(rc, findings):
        # a warning-level rule that heads the verdict as the root cause (a process that died of SIGBUS / SIGKILL,
        # MEM048 / MEM017: warnings so that the worker's own error outranks them) is still what ended the job
        return int(ExitCode.FINDINGS)
    return int(exit_code(findings))


def _root_warning(rc: Mapping[str, Any], findings: list[Finding]) -> bool:
    head = _headline_finding(rc, findings)
    return head is not None and head.severity is Severity.WARNING and head.data.get("role") == "root"


def with_benign(rc: dict[str, Any], findings: list[Finding]) -> dict[str, Any]:
    """No cause named, but the text held lines a rule knows as no fault however they are logged (MindSpore's
    `[ERROR] … GetRealPath] Get realpath failed` for a notebook cell, ENV340): say that these lines were read and
    are not the failure, and that the failure, if the run failed, is not in the text."""
    cat = load_catalogue()
    benign = [f for f in findings if (r := cat.get(f.rule)) is not None and r.benign]
    if not benign:
        return rc
    n = sum(f.count for f in benign)
    ids = list(dict.fromkeys(f.rule for f in benign))
    return dict(rc, benign=ids,
                reason=f"no error found: {n} line(s) are ones a rule knows as no fault however they are logged "
                       f"({', '.join(ids)}); if the run failed, the failure is not in this text")  # fmt: skip


def coverage(facts: Facts, scan: LogScan, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What was read and what was not: files, lines, ranks, jobs (issue 13: coverage is part of the verdict)."""
    files = facts.get_known("logs.files") or [{"file": s["path"], "lines": s.get("lines")} for s in scan.files]
    read = [f for f in scan.files if f.get("readable")]
    return {
        "files_read": len(read) if scan.files else len(files),
        "files_skipped": len({str(k.get("file")) for k in scan.skipped} - {str(f["path"]) for f in read}),
        "lines": sum(int(f.get("lines") or 0) for f in (read or files)),
        "ranks": sorted(r["rank"] for r in rows if r["ends"] != "missing"),
        "missing_ranks": list(facts.get_known("logs.missing_ranks") or []),
        "launcher_files": len((facts.get_known("logs.launcher") or {}).get("files", [])),
        "jobs": 1,
    }


def _render(findings: list[Finding], not_evaluated: list[Any], rc: Mapping[str, Any], rows: list[dict[str, Any]],
            scan: LogScan, verbose: bool, cov: Mapping[str, Any] | None = None) -> None:  # fmt: skip
    from rich.markup import escape

    from msdoctor.report.render import console, render_findings

    out = console()
    n_files = len(scan.files)
    ranks = [r for r in rows if r["ends"] != "missing"]
    cov = cov or {}
    out.print(f"[bold]msdoctor logs[/]: {cov.get('files_read', n_files)} file(s) read ({cov.get('lines', 0):,} lines), "
              f"{cov.get('files_skipped', 0)} skipped, {len(ranks)} rank(s)"
              + (f" ({_short(list(cov['ranks']))})" if cov.get("ranks") else "") + ", 1 job")  # fmt: skip
    if rc.get("rule") and rc.get("message"):
        who = f"rank {rc['rank']}" if rc.get("rank") is not None else ("this process" if n_files == 1 else "first error")
        out.print(f"[bold red]Root cause: {who}[/] ({rc['rule']}) — {escape(rc['message'])}")
        for step in rc.get("chain", []):
            out.print(f"  • {escape(step)}")
        if rc.get("fix") and rc.get("verdict") == "first-error":
            out.print(f"  fix: {escape(str(rc['fix']).split(chr(10))[0][:300])}")
        if rc.get("other_causes"):
            text = " ".join(str(rc["other_causes"]).split())
            out.print(f"  when it is not that: {escape(text if verbose else text[:400] + ('…' if len(text) > 400 else ''))}")
    else:
        what = {"unrecognised-error": "unrecognised error", "incomplete-traceback": "incomplete traceback",
                "stack-dump": "a stack dump, no error"}.get(
            str(rc.get("verdict")), "not determined")
        out.print(f"[bold]Root cause:[/] {what} — {escape(str(rc.get('reason')))}")
    shown = rows if verbose else _interesting(rows, rc.get("rank"))
    out.print("[bold]Timeline[/] (per rank: how its log ends, first anomaly, last progress)")
    for r in shown:
        fa, lp = r["first_anomaly"], r["last_progress"]
        first = f"{(fa.get('ts') or '?')[11:19]} {fa.get('rule') or 'error'}" if fa else "none"
        prog = f"step {lp.get('step')} @ {(lp.get('ts') or '?')[11:19]}" if lp else "none"
        out.print(f"  rank {r['rank']:>4}  {r['ends']:<12} first: {escape(first):<18} progress: {escape(prog)}")
    if len(shown) < len(rows):
        out.print(f"  … {len(rows) - len(shown)} more rank(s) (use -v or --json)")
    out.print("")
    if not any(f.severity.value in ("error", "warning") for f in findings):
        # not a clean bill of health: say what was read, that no error was found (or that the error found is
        # one no rule knows), and what cannot be judged
        head = {"unrecognised-error": "[bold]No rule recognises the error above[/] (no cause named)",
                "incomplete-traceback": "[bold]A traceback without its exception line[/] (no cause named)",
                "stack-dump": "[bold]A stack dump of a waiting process[/] (no cause named)"}.get(
            # the scan reads the lines a rule or an error marker points at: a warning no rule knows is not read,
            # so the claim is about errors and known warnings only (vllm-ascend#5949's c10d `… has timed out, will
            # retry.` warnings, with the rule that knows them off, were called "no error or warning")
            str(rc.get("verdict")), "[bold]No error found[/], nor a warning any rule knows,")  # fmt: skip
        out.print(f"{head} in {cov.get('files_read', n_files)} file(s) "
                  f"({cov.get('lines', 0):,} lines, {len(ranks)} rank(s)).")
        out.print("  Not judged from these logs: whether a rank hung or died silently (that needs every rank's log; "
                  "a rank's own log rarely says it hangs) and anything the logs do not record (device health, network).")  # fmt: skip
        if findings:
            render_findings(findings, not_evaluated, out=out, verbose=verbose)
    else:
        render_findings(findings, not_evaluated, out=out, verbose=verbose)
    if scan.skipped:
        out.print(f"[dim]skipped: {len(scan.skipped)} file(s)/part(s) not readable[/]")
        for s in scan.skipped[: (None if verbose else 5)]:
            loc = f"{s.get('file')}" + (f":{s['line']}" if s.get("line") else "")
            out.print(f"    [dim]{escape(loc)}: {escape(str(s.get('reason')))}[/]")


def _interesting(rows: list[dict[str, Any]], culprit: int | None) -> list[dict[str, Any]]:
    if len(rows) <= TIMELINE_ROWS:
        return rows
    pick = [r for r in rows if r["rank"] == culprit or r["ends"] in ("missing", "root", "unclassified")][: TIMELINE_ROWS // 2]
    rest = [r for r in rows if r not in pick][: TIMELINE_ROWS - len(pick)]
    return sorted(pick + rest, key=lambda r: r["rank"])


def _short(ranks: list[int], n: int = 8) -> str:
    return ", ".join(map(str, ranks[:n])) + (f", … ({len(ranks)} ranks)" if len(ranks) > n else "")
