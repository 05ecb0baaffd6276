"""`msdoctor analyze DIR`: every rank's profile → where the step time goes, who is slow, and why.

Flow: ``msdoctor.facts.profile.collect`` (discovery, DuckDB scans, pure analyses) → facts
``profile.*`` → the check rules of source "profile" → findings. The tables are rendered from the
facts alone, so ``--facts F`` replays a report on another machine exactly.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from msdoctor.checks.perf import loss_line
from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import run_checks
from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError, UsageError
from msdoctor.report.render import console, exit_code, json_payload, print_json, render_findings, utf8_ok

RANK_KEYS = ("rank", "steps", "step_ms", "compute_ms", "comm_ms", "comm_overlapped_ms", "free_ms", "comm_ratio")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, nargs="?", help="profiler output: a folder holding *_ascend_ms rank folders")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("--baseline", type=Path, metavar="DIR2", help="compare against this earlier run's profile")
    p.add_argument("--merge-trace", type=Path, metavar="OUT.json",
                   help="write one Chrome-trace/Perfetto file with every rank as a process")  # fmt: skip
    p.add_argument("--dump-facts", type=Path, metavar="F", help="write the facts snapshot to F")
    p.add_argument("--facts", type=Path, metavar="F", help="replay: read facts from F instead of DIR")
    p.add_argument("--top", type=int, default=8, help="operators to list (default 8)")
    p.add_argument("--memory-limit", default="700MB", help="DuckDB memory limit (default 700MB)")
    p.add_argument("-v", "--verbose", action="store_true", help="all evidence, full fixes, rules not evaluated")


def _collect(args: argparse.Namespace) -> tuple[Facts, dict[str, Any]]:
    from msdoctor.facts import profile as prof
    from msdoctor.facts import profile_trace as pt

    try:
        pt.connect(args.memory_limit).close()
    except pt.duckdb.Error as exc:
        raise UsageError(f"--memory-limit {args.memory_limit!r}: {str(exc).splitlines()[0]}") from None

    extra: dict[str, Any] = {}
    with pt.make_tmpdir() as td:
        data = prof.collect(args.dir, tmpdir=Path(td), memory_limit=args.memory_limit)
        facts = data.facts
        if args.baseline is not None:
            with pt.make_tmpdir() as td2:
                base = prof.collect(args.baseline, tmpdir=Path(td2), memory_limit=args.memory_limit)
            prof.add_baseline(facts, base.facts)
            extra["baseline"] = str(args.baseline)
        if args.merge_trace is not None:
            if not data.traces:
                raise InputError(f"{args.dir}: no readable trace_view.json to merge")
            con = pt.connect(args.memory_limit)
            try:
                n = pt.merge_traces(con, data.traces, args.merge_trace)
            except (pt.duckdb.IOException, OSError) as exc:  # e.g. its folder does not exist
                raise InputError(f"--merge-trace {args.merge_trace}: cannot write ({str(exc).splitlines()[0]})") from None
            finally:
                con.close()
            extra["merged_trace"] = {"path": str(args.merge_trace), "events": n, "ranks": len(data.traces)}
    if not any(facts.is_known(k) for k in ("profile.ranks", "profile.top_ops", "profile.comm_ops")):
        skipped = (facts.get_known("profile.files") or {}).get("skipped") or []
        why = f": {skipped[0]['path']}: {skipped[0]['reason']}" if skipped else ""
        raise InputError(f"{args.dir}: no readable profile data{why}")
    return facts, extra


def run(args: argparse.Namespace) -> int:
    if args.top < 0:  # a negative slice would list all operators but the last ones
        raise UsageError(f"--top must be 0 or more, got {args.top}")
    if args.facts is not None:
        facts = Facts.load(args.facts, expect=("profile",))
        extra: dict[str, Any] = {"replayed_from": str(args.facts)}
    elif args.dir is None:
        raise InputError("give the profiler output folder (msdoctor analyze DIR) or --facts F")
    else:
        facts, extra = _collect(args)
    if args.dump_facts is not None:
        facts.dump(args.dump_facts)
    rules = load_catalogue().select(source="profile", kind="check")
    ev = run_checks(rules, facts)
    if args.json:
        ranks = facts.get_known("profile.ranks") or []
        print_json(json_payload(
            "analyze", ev.findings, ev.not_evaluated,
            root=facts.get_known("profile.root"),
            world=facts.get_known("profile.world"),
            ranks=[{k: r[k] for k in (*RANK_KEYS, "stage", "data_ms", "free_ratio", "source") if k in r} for r in ranks],
            stages=facts.get_known("profile.stages"), top_ops=facts.get_known("profile.top_ops"),
            comm_ops=facts.get_known("profile.comm_ops"), comm_groups=facts.get_known("profile.comm_groups"),
            links=facts.get_known("profile.links"), links_outside=facts.get_known("profile.links_outside"),
            comm_wait=facts.get_known("profile.comm_wait"), packets=facts.get_known("profile.packets"), operator_memory=facts.get_known("profile.operator_memory"),
            module_memory=facts.get_known("profile.module_memory"), static_memory=facts.get_known("profile.static_memory"),
            operators=facts.get_known("profile.operators"), data_gaps=facts.get_known("profile.data_gaps"),
            files=facts.get_known("profile.files"), compare=facts.get_known("profile.compare"),
            memory=facts.get_known("profile.memory"), dataset=facts.get_known("profile.dataset"),
            passed=ev.passed, **extra,
        ))  # fmt: skip
        return int(exit_code(ev.findings))
    out = console()
    render_tables(facts, out, top=args.top, extra=extra)
    render_findings(ev.findings, ev.not_evaluated, out=out, verbose=args.verbose)
    return int(exit_code(ev.findings))


# -- terminal views (from facts only) --------------------------------------------------------------


def _bar(r: dict[str, Any], scale: float, width: int = 16) -> str:
    """One stacked bar per rank: compute █ (green), exposed comm █ (red), free ░ (dim)."""
    full, light = ("█", "░") if utf8_ok() else ("#", ".")
    parts = [(r["compute_ms"], "green", full), (r["comm_ms"], "red", full), (r["free_ms"], "grey50", light)]
    cells = [round(v / scale * width) if scale else 0 for v, _, _ in parts]
    return "".join(f"[{style}]{ch * n}[/]" for (_, style, ch), n in zip(parts, cells, strict=True))


def _coverage(out: Any, world: dict[str, Any], files: dict[str, Any]) -> None:
    """What was read and what was not, in one or two lines (never a clean bill about unread input)."""
    read = files.get("read") or []
    names = sorted({r["file"] for r in read})
    line = f"read {len(read)} file(s)"
    if names:
        line += f" ({', '.join(names)})"
    bad = sum(r.get("bad_row_count", 0) for r in read)
    if bad:
        line += f"; {bad} malformed row(s) skipped"
    if files.get("skipped"):
        line += f"; [yellow]{len(files['skipped'])} skipped[/] (PERF306)"
    if files.get("ignored"):
        line += f"; {len(files['ignored'])} not analysed (-v / --json lists them)"
    out.print(line)
    if world.get("holds") and not world.get("count", 0) > 1 and len(read) <= 1:
        out.print(f"[dim]this capture holds only: {', '.join(world['holds'])}[/]")


def render_tables(facts: Facts, out: Any, *, top: int = 8, extra: dict[str, Any] | None = None) -> None:
    from rich.markup import escape

    world = facts.get_known("profile.world") or {}
    ranks = facts.get_known("profile.ranks") or []
    files = facts.get_known("profile.files") or {}
    steps = sorted({r["steps"] for r in ranks})
    head = f"[bold]msdoctor analyze[/] {escape(str(facts.get_known('profile.root', '')))}: {world.get('count', 0)} rank(s)"
    if world.get("kinds"):
        head += f" ({', '.join(world['kinds'])})"
    if world.get("frameworks"):
        head += f" from {', '.join(world['frameworks'])}"
    if steps:
        head += f", {'/'.join(map(str, steps))} step(s) each"
    if world.get("ms_version"):
        head += f", MindSpore {world['ms_version']}"
    out.print(head)
    _coverage(out, world, files)
    for r in files.get("recovered") or []:
        out.print(f"[yellow]recovered[/] rank {r['rank']}: {escape(loss_line(r))}")
    _ranks_table(facts, out, ranks)
    _ops_tables(facts, out, top)
    _links_table(facts, out)
    _wait_memory_tables(facts, out)
    cmp = facts.get_known("profile.compare") or {}
    step = (cmp.get("phases") or {}).get("step_ms")
    if step:  # say the comparison ran: without a regression (PERF305) nothing else would show it
        n = cmp.get("ranks") or {}
        src = escape(str(extra.get("baseline", "baseline"))) if extra else "baseline"
        line = (f"baseline {src}: step {step['baseline']:.1f} ms → {step['current']:.1f} ms "
                f"({step.get('ratio', 0):.2f}×), {n.get('baseline', '?')} → {n.get('current', '?')} rank(s)")
        if n.get("baseline") != n.get("current"):
            line += "; the rank counts differ, so the per-rank means compare different set-ups"
        out.print(line)
    if extra and extra.get("merged_trace"):
        m = extra["merged_trace"]
        out.print(f"merged trace: {escape(m['path'])} ({m['events']} events, {m['ranks']} rank(s)); open it in ui.perfetto.dev")



def _ranks_table(facts: Facts, out: Any, ranks: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    if ranks:
        t = Table(title="time per step (mean, ms): [green]compute[/], [red]comm[/] not hidden by compute, comm "
                        "hidden under compute, [grey50]free[/], data wait",
                  title_justify="left", box=None, pad_edge=False)  # fmt: skip
        for c in ("rank", "stage", "step", "compute", "comm", "hidden", "free", "data", "comm%"):
            t.add_column(c, justify="right")
        t.add_column("", no_wrap=True, overflow="crop")
        scale = max(r["compute_ms"] + r["comm_ms"] + r["free_ms"] for r in ranks)
        shown = ranks if len(ranks) <= 32 else sorted(ranks, key=lambda r: -abs(r.get("z_compute", 0)))[:32]
        for r in sorted(shown, key=lambda r: r["rank"]):
            t.add_row(str(r["rank"]), str(r.get("stage", 0)), f"{r['step_ms']:.1f}", f"{r['compute_ms']:.1f}",
                      f"{r['comm_ms']:.1f}", f"{r['comm_overlapped_ms']:.1f}", f"{r['free_ms']:.1f}",
                      "n/a" if r.get("data_ms") is None else f"{r['data_ms']:.1f}", f"{100 * r['comm_ratio']:.1f}",
                      _bar(r, scale))  # fmt: skip
        out.print(t)
        if any(r.get("data_ms") is None for r in ranks) and "profile.data_gaps" in facts:
            gaps = facts["profile.data_gaps"]
            why = getattr(gaps, "reason", "") or "not measured on some ranks"
            out.print(f"[yellow]data wait n/a: not evaluated[/] — {escape(why)}")
        if len(ranks) > 1 and not facts.is_known("profile.comm_ops"):
            out.print("[yellow]no communication ops in these traces or communication.json: the comm column is not measured[/]")
        if len(shown) < len(ranks):
            out.print(f"[dim]… {len(ranks) - len(shown)} more ranks (the 32 most unusual are shown; --json has all)[/]")


def _ops_tables(facts: Facts, out: Any, top: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    stages = facts.get_known("profile.stages") or []
    if len(stages) > 1:
        t = Table(title="pipeline stages", title_justify="left", box=None, pad_edge=False)
        for c in ("stage", "ranks", "compute ms", "Send/Recv ms", "Send/Recv %"):
            t.add_column(c, justify="right")
        for s in stages:
            rs = s["ranks"]
            t.add_row(str(s["stage"]), f"{rs[0]}…{rs[-1]}" if len(rs) > 4 else ",".join(map(str, rs)),
                      f"{s['compute_ms']:.1f}", f"{s['sendrecv_ms']:.1f}", f"{100 * s['sendrecv_share']:.1f}")  # fmt: skip
        out.print(t)
    ops = facts.get_known("profile.top_ops") or []
    if ops:
        t = Table(title="top operators (all ranks)", title_justify="left", box=None, pad_edge=False)
        for c in ("op", "calls", "total ms", "share"):
            t.add_column(c, justify="right" if c != "op" else "left")
        for o in ops[:top]:
            t.add_row(escape(o["op"]), str(o["count"]), f"{o['total_ms']:.1f}", f"{100 * o['share']:.1f} %")
        out.print(t)
    comm = facts.get_known("profile.comm_ops") or []
    if comm:
        t = Table(title="communication ops", title_justify="left", box=None, pad_edge=False)
        for c in ("type", "count", "total ms", "p50 ms", "p99 ms", "max ms", "max at"):
            t.add_column(c, justify="right" if c != "type" else "left")
        for c in comm:
            t.add_row(c["type"], str(c["count"]), f"{c['total_ms']:.1f}", f"{c['p50_ms']:.2f}", f"{c['p99_ms']:.2f}",
                      f"{c['max_ms']:.2f}", f"rank {c['max_rank']} step {c['max_step']}")  # fmt: skip
        out.print(t)


def _links_table(facts: Facts, out: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    links = facts.get_known("profile.links") or []
    if links:
        # the slowest links that moved real data (≥ 1 MB), then the largest ones
        slow = sorted((x for x in links if x["size_mb"] >= 1.0), key=lambda x: x["bandwidth_gbps"])[:3]
        big = slow + [x for x in sorted(links, key=lambda x: -x["size_mb"]) if x not in slow][: max(0, 5 - len(slow))]
        outside = facts.get_known("profile.links_outside") or {}
        title = f"links, slowest then largest ({len(big)} of {len(links)}"
        title += f"; {outside['count']} to ranks outside this capture not shown)" if outside.get("count") else ")"
        t = Table(title=title, title_justify="left", box=None, pad_edge=False)
        for c in ("link", "transport", "group", "MB", "ms", "GB/s"):
            t.add_column(c, justify="right" if c in ("MB", "ms", "GB/s") else "left")
        for x in big:
            t.add_row(f"{x['src']}→{x['dst']}", x["transport"], escape(str(x["group_name"] or x["group"])),
                      f"{x['size_mb']:.1f}", f"{x['time_ms']:.1f}", f"{x['bandwidth_gbps']:.2f}")  # fmt: skip
        out.print(t)


def _wait_memory_tables(facts: Facts, out: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    wait = facts.get_known("profile.comm_wait") or []
    if len(wait) > 1:
        t = Table(title="time in collectives per rank (communication.json): the rank that waits least is the one "
                        "the others wait for", title_justify="left", box=None, pad_edge=False)  # fmt: skip
        for c in ("rank", "ops", "elapse ms", "transit ms", "wait ms", "wait ratio", "sync ratio"):
            t.add_column(c, justify="right")
        for w in wait[:16]:
            t.add_row(str(w["rank"]), str(w["ops"]), f"{w['elapse_ms']:.1f}", f"{w['transit_ms']:.1f}",
                      f"{w['wait_ms']:.1f}", f"{w['wait_ratio']:.4f}", f"{w['sync_ratio']:.4f}")  # fmt: skip
        out.print(t)
    mem = facts.get_known("profile.memory") or []
    if mem:
        t = Table(title="memory peaks per component (memory_record.csv, MB)", title_justify="left", box=None, pad_edge=False)
        for c in ("rank", "component", "allocated", "reserved", "records"):
            t.add_column(c, justify="right" if c != "component" else "left")
        for x in mem[:24]:
            alloc = "n/a" if x.get("peak_allocated_mb") is None else f"{x['peak_allocated_mb']:.1f}"
            res = "n/a" if x.get("peak_reserved_mb") is None else f"{x['peak_reserved_mb']:.1f}"
            t.add_row(str(x["rank"]), escape(x["component"]), alloc, res, str(x["records"]))
        out.print(t)
