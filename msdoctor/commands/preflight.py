"""`msdoctor preflight`: check the environment, rank table and network before launch.

Facts come from collectors (``msdoctor.facts.preflight``), verdicts from the rules ENV1xx, RT1xx,
COMM1xx, MEM1xx, DATA1xx; the view is one line per group in the style of ``flutter doctor``.
MindSpore is never imported (a test proves it).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

from msdoctor.engine.catalogue import Rule
from msdoctor.engine.evaluate import Evaluation, run_checks
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Finding, NotEvaluated, Severity, sort_findings
from msdoctor.errors import InputError, UsageError
from msdoctor.facts.preflight import COMPARE_GROUP, GROUPS, Group, Options, collect, flatten
from msdoctor.report.render import STYLE, console, exit_code, json_payload, marks, print_json, utf8_ok


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", default="/", help="filesystem root to read (an emulated node, e.g. samples/roots/good)")
    p.add_argument("--env-file", help="launch environment as KEY=VALUE lines (default: this process's environment)")
    p.add_argument("--rank-table", help="rank table JSON (default: $RANK_TABLE_FILE)")
    p.add_argument("--master-port", type=int, help="msrun master port to probe (default: $MS_SCHED_PORT or 8118)")
    p.add_argument("--ckpt-dir", help="checkpoint directory whose free disk to check")
    p.add_argument("--no-npu-smi", action="store_true", help="do not run npu-smi")
    p.add_argument("--dump-facts", metavar="F", help="write the facts snapshot to F")
    p.add_argument("--facts", metavar="F", help="replay the rules on a facts snapshot instead of collecting")
    p.add_argument("--compare", nargs="+", metavar="SNAPSHOT", help="compare facts snapshots of several nodes")
    p.add_argument("-v", "--verbose", action="store_true", help="details: facts, evidence, timings")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")


def preflight_rules() -> dict[str, list[Rule]]:
    """The rules whose TOML names a preflight group, by group: the catalogue alone decides what runs.

    The catalogue is parsed without importing every check module (the live-run and log checks pull in
    modules preflight never needs, ~3x the parse time); the parameters of the rules preflight runs are
    validated here instead, so a bad one is still a catalogue error before anything runs."""
    from msdoctor.engine import catalogue

    out: dict[str, list[Rule]] = {}
    for rule in catalogue.load_from(catalogue.rules_root(), check_params=False):
        if rule.preflight_group:
            catalogue.validate_params(rule)
            out.setdefault(rule.preflight_group, []).append(rule)
    return out


def evaluate(facts: Facts, groups: tuple[Group, ...]) -> tuple[Evaluation, list[dict[str, Any]]]:
    """Run each group's rules, timing every check; the per-group status follows the worst outcome."""
    total = Evaluation()
    out: list[dict[str, Any]] = []
    collect_ms = (facts.meta or {}).get("collect_ms", {})
    by_group = preflight_rules()
    for g in groups:
        ev = Evaluation()
        check_ms: dict[str, float] = {}
        titles = {rule.id: rule.title for rule in by_group.get(g.key, [])}
        for rule in by_group.get(g.key, []):
            t = time.perf_counter()
            ev.extend(run_checks([rule], facts))
            check_ms[rule.id] = round((time.perf_counter() - t) * 1000, 3)
        sev = {f.severity for f in ev.findings}
        crashed = f"collector.{g.key}.error" in facts
        if Severity.ERROR in sev:
            status = "error"
        elif Severity.WARNING in sev or crashed:
            status = "warning"
        elif not ev.passed and not ev.findings:
            status = "not_evaluated"
        else:
            status = "ok"
        out.append({
            "group": g.key, "title": g.title, "status": status, "summary": summary(g.key, facts),
            "collect_ms": collect_ms.get(g.key), "check_ms": check_ms,
            "findings": [f.rule for f in sort_findings(ev.findings)], "passed": ev.passed,
            "not_evaluated": [n.to_dict() for n in ev.not_evaluated], "titles": titles,
        })  # fmt: skip
        total.extend(ev)
    total.findings = sort_findings(total.findings)
    return total, out


def _gib(n: Any) -> str:
    return f"{n / 2**30:.1f} GiB" if isinstance(n, (int, float)) else "?"


def summary(group: str, f: Facts) -> str:
    """One short line of what was found (not a verdict: the status mark carries that)."""
    k = f.get_known
    if group == "host":
        py = k("host.python.version", "?")
        return f"Python {py}, {k('host.os', '?')}, {k('host.cpu_count', '?')} CPUs, {_gib(k('host.mem.total_bytes'))} RAM, /dev/shm {_gib(k('host.shm.total_bytes'))}"
    if group == "packages":
        parts = []
        for name in ("mindspore", "mindformers", "numpy", "protobuf"):
            fact = f"pkg.{name}.version"
            if not f.is_known(fact):
                parts.append(f"{name} unknown")
            else:  # None is a known fact: looked where pip installs, found nothing
                parts.append(f"{name} {f[fact] if f[fact] is not None else 'not installed'}")
        return ", ".join(parts)
    if group == "cann":
        if k("cann.installed") is False:
            return f"CANN not installed; {len(k('ascend.devices') or [])} /dev/davinci devices"
        ver = k("cann.toolkit.version") or k("cann.compiler.version") or "version unknown"
        return (f"CANN {ver} at {k('cann.toolkit.path', '?')}, driver {k('ascend.driver.version') or 'unknown'}, "
                f"{len(k('ascend.devices') or [])} /dev/davinci devices")  # fmt: skip
    if group == "env":
        v = k("env.vars") or {}
        hccl = sum(1 for x in v if x.startswith("HCCL_"))
        return f"{len(v)} relevant variables ({hccl} HCCL_*) from {k('env.source', '?')}"
    if group == "ranktable":
        if not f.is_known("ranktable.path"):
            return "no rank table (none given; msrun's dynamic cluster needs none)"
        servers = k("ranktable.servers")
        if servers is None:
            return f"{k('ranktable.path')}: unreadable"
        return f"{k('ranktable.path')}: version {k('ranktable.version')}, {len(servers)} server(s), {sum(len(s['devices']) for s in servers)} device(s)"
    if group == "network":
        mp = k("net.master_port") or {}
        port = f"master port {mp.get('port')} " + ("free" if mp.get("bindable") else "in use" if mp.get("bindable") is False else "not probed")
        fw = "firewall rules read" if f.is_known("net.firewall") else "firewall not evaluated (no rules file)"
        return f"{port}; {fw}"
    if group == "compare":
        nodes = k("compare.nodes") or {}
        return f"{len(nodes)} nodes: {', '.join(nodes)}"
    return ""


def not_evaluated_by_reason(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    """(ids, reason) with the rules that share a reason named together (``RT101, RT102 …``)."""
    by_reason: dict[str, list[str]] = {}
    for n in rows:
        # "ranktable.servers: no rank table …" and "ranktable.status: no rank table …" are one reason
        fact, sep, why = n["reason"].partition(": ")
        reason = why if sep and re.fullmatch(r"[\w.\-]+", fact) else n["reason"]
        by_reason.setdefault(reason, []).append(n["rule"])
    out = []
    for reason, ids in by_reason.items():
        named = ", ".join(ids) if len(ids) <= 3 else f"{ids[0]} … {ids[-1]} ({len(ids)} checks)"
        out.append((named, reason))
    return out


_ASCII = str.maketrans({"—": "-", "–": "-", "−": "-", "…": "...", "≥": ">=", "≤": "<=", "×": "x", "↔": "<->",
                        "→": "->", "’": "'", "“": '"', "”": '"'})  # fmt: skip


class _Out:
    """Print through rich; on a stdout that is not UTF-8, transliterate so nothing fails to encode."""

    def __init__(self, console_: Any, utf8: bool) -> None:
        self.console, self.utf8 = console_, utf8
        self.encoding = getattr(sys.stdout, "encoding", None) or "ascii"

    def print(self, text: str) -> None:
        if not self.utf8:
            text = text.translate(_ASCII).encode(self.encoding, "replace").decode(self.encoding)
        self.console.print(text)


def render_text(evaluation: Evaluation, groups: list[dict[str, Any]], facts: Facts, verbose: bool, elapsed_ms: float) -> None:
    from rich.markup import escape

    console_ = console()
    console_.soft_wrap = True  # one line per group even when stdout is a pipe (80 columns otherwise)
    out = _Out(console_, utf8_ok())
    m = marks()
    sym = {"ok": m["ok"], "warning": m["warning"], "error": m["error"], "not_evaluated": m["skip"]}
    style = {"ok": "green", "warning": STYLE["warning"], "error": STYLE["error"], "not_evaluated": "dim"}
    by_rule: dict[str, list[Finding]] = {}
    for f in evaluation.findings:
        by_rule.setdefault(f.rule, []).append(f)
    for g in groups:
        mark = sym[g["status"]]
        mark = mark if mark.startswith("[") else f"[{mark}]"
        ms = g["collect_ms"]
        t = f" ({ms:.0f} ms)" if isinstance(ms, (int, float)) else ""
        partial = ""
        if g["status"] != "not_evaluated" and g["not_evaluated"]:
            partial = f"; {len(g['not_evaluated'])} check(s) not evaluated"
        out.print(f"[{style[g['status']]}]{escape(mark)}[/] [bold]{escape(g['title'])}[/] — {escape(g['summary'] + partial)}[dim]{t}[/]")
        for rid in dict.fromkeys(g["findings"]):
            hits = by_rule.pop(rid, [])
            for f in hits:
                sev = f.severity.value
                out.print(f"    [{STYLE[sev]}]{escape(m[sev])} {f.rule}[/] {escape(f.message)}")
                if verbose:  # flutter-doctor style: the evidence is a detail
                    for e in f.evidence:
                        out.print(f"        [dim]evidence:[/] {escape(str(e))}")
            if hits and hits[0].fix:  # one fix per rule, however many offenders it named
                out.print(f"      [green]fix:[/] {escape(' '.join(hits[0].fix.split()))}")
        if verbose:
            for n in g["not_evaluated"]:
                out.print(f"    [dim]{escape(m['skip'])} {n['rule']} not evaluated: {escape(n['reason'])}[/]")
        else:  # a check that could not run is named with its reason, never only counted (issue 13)
            for ids, reason in not_evaluated_by_reason(g["not_evaluated"]):
                title = g.get("titles", {}).get(ids)
                what = f"{ids} ({title})" if title else ids  # say which check, not only its id
                out.print(f"    {escape(m['skip'])} {escape(what)} not evaluated: {escape(reason)}")
        if verbose:
            timing = ", ".join(f"{r} {v:.2f} ms" for r, v in g["check_ms"].items())
            out.print(f"    [dim]checks: {escape(timing)}[/]")
    n_err = sum(1 for f in evaluation.findings if f.severity is Severity.ERROR)
    n_warn = sum(1 for f in evaluation.findings if f.severity is Severity.WARNING)
    n_info = sum(1 for f in evaluation.findings if f.severity is Severity.INFO)
    line = (f"{n_err} error(s), {n_warn} warning(s), {n_info} info; {len(evaluation.passed)} check(s) passed, "
            f"{len(evaluation.not_evaluated)} not evaluated — {elapsed_ms / 1000:.2f} s")  # fmt: skip
    if evaluation.findings:
        head = "Doctor summary"
    elif evaluation.not_evaluated:  # not a clean bill of health: part of the checks could not run
        head = f"Incomplete — no issues in what could be checked, {len(evaluation.not_evaluated)} check(s) could not run"
    else:
        head = "No issues found"
    out.print(f"[bold]{escape(head)}:[/] {escape(line)}")
    if not verbose:
        out.print("[dim]-v shows the evidence and what every check took[/]")


# What a preflight snapshot always holds (host.* at least); another command's snapshot holds none of these.
SNAPSHOT_PREFIXES = ("host", "env", "pkg", "cann", "ascend", "ranktable", "net")


def load_compare(paths: list[str]) -> Facts:
    nodes: dict[str, dict[str, Any]] = {}
    stems = [Path(p).stem for p in paths]
    for p, stem in zip(paths, stems, strict=True):
        snap = Facts.load(p, expect=SNAPSHOT_PREFIXES)
        # Users name snapshots after their nodes; fall back to the path when two names collide.
        label = stem if stems.count(stem) == 1 else p
        nodes[label] = flatten(snap)
    facts = Facts()
    facts.set("compare.nodes", nodes, ", ".join(paths))
    return facts


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    warnings: list[str] = []
    if args.compare:
        if len(args.compare) < 2:
            raise UsageError("--compare needs at least two snapshots")
        facts = load_compare(args.compare)
        groups: tuple[Group, ...] = (COMPARE_GROUP,)
    elif args.facts:
        facts = Facts.load(args.facts, expect=SNAPSHOT_PREFIXES)
        groups = GROUPS
    else:
        groups = GROUPS
        opts = Options(root=Path(args.root), env_file=args.env_file, rank_table=args.rank_table,
                       master_port=args.master_port, ckpt_dir=args.ckpt_dir, run_npu_smi=not args.no_npu_smi)  # fmt: skip
        facts, warnings = collect(opts)
    if args.dump_facts:
        try:
            Path(args.dump_facts).write_bytes(facts.dumps())
        except OSError as exc:
            raise InputError(f"--dump-facts {args.dump_facts}: cannot write ({exc.strerror or exc})") from None
    for w in warnings:
        print(f"msdoctor preflight: {w}", file=sys.stderr)
    evaluation, group_rows = evaluate(facts, groups)
    elapsed = (time.perf_counter() - t0) * 1000
    if args.json:
        coverage = {
            "checks": len(evaluation.passed) + len({f.rule for f in evaluation.findings}) + len(evaluation.not_evaluated),
            "evaluated": len(evaluation.passed) + len({f.rule for f in evaluation.findings}),
            "not_evaluated": len(evaluation.not_evaluated),
            "complete": not evaluation.not_evaluated,
        }
        print_json(json_payload(
            "preflight", evaluation.findings, evaluation.not_evaluated, groups=group_rows,
            passed=evaluation.passed, coverage=coverage, meta=facts.meta, elapsed_ms=round(elapsed, 2),
        ))  # fmt: skip
    else:
        render_text(evaluation, group_rows, facts, args.verbose, elapsed)
    return int(exit_code(evaluation.findings))


__all__ = ["configure", "run", "evaluate", "summary", "NotEvaluated"]
