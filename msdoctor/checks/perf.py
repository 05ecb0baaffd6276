"""Checks over profile facts (rules PERF/COMM/DATA/PAR 301–399, source "profile").

Each check reads ``profile.*`` facts (collected by ``msdoctor.facts.profile``) and the rule's
thresholds, and yields one Hit per problem naming the rank(s), step(s) and the numbers.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Hit, check_params


def _ev(text: str, fact: str) -> Evidence:
    return Evidence(text=text, fact=fact)


def _ranges(ranks: Iterable[int]) -> str:
    """[0,1,2,3,5] → "0–3, 5"."""
    rs = sorted(set(ranks))
    out, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else f"{rs[i]}–{rs[j]}")
        i = j + 1
    return ", ".join(out)


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _rank_line(r: Mapping[str, Any]) -> str:
    return (f"rank {r['rank']}: step {r['step_ms']:.1f} ms = compute {r['compute_ms']:.1f} + comm {r['comm_ms']:.1f} "
            f"+ free {r['free_ms']:.1f} (comm {_pct(r['comm_ratio'])}, overlapped {r['comm_overlapped_ms']:.1f})")  # fmt: skip


@check_params(ratio=float)
def comm_exposed(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """PERF301: communication not hidden by compute takes too much of the step."""
    ranks = facts.need("profile.ranks")
    if len(ranks) > 1:
        facts.need("profile.comm_ops")  # no collective seen anywhere: the comm column was not measured
    if not ranks:
        return
    mean = statistics.fmean(r["comm_ratio"] for r in ranks)
    if mean < float(params["ratio"]):
        return
    worst = sorted(ranks, key=lambda r: -r["comm_ratio"])
    w = worst[0]
    yield Hit(
        message=(f"communication not hidden by compute is {_pct(mean)} of the step on average over {len(ranks)} "
                 f"rank(s) (threshold {_pct(float(params['ratio']))}); worst rank {w['rank']}: {w['comm_ms']:.1f} ms "
                 f"of {w['step_ms']:.1f} ms ({_pct(w['comm_ratio'])})"),  # fmt: skip
        evidence=tuple(_ev(_rank_line(r), "profile.ranks") for r in worst[:4]),
        rank=w["rank"],
        data={"mean_comm_ratio": round(mean, 4), "worst_rank": w["rank"], "worst_comm_ratio": w["comm_ratio"]},
    )


@check_params(excess=float, min_ranks=int, min_wait_ms=float, pair_excess=float, z=float)
def slow_rank(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """PERF302: a rank computes longer than its peers (robust z across ranks of its stage)."""
    ranks = facts.need("profile.ranks")
    if len(ranks) == 2:
        yield from _slow_of_two(ranks, params)
        return
    if len(ranks) < int(params["min_ranks"]):
        return
    zmin, excess = float(params["z"]), float(params["excess"])
    for r in ranks:
        med = r["median_compute_ms"]
        if r["z_compute"] < zmin or r["compute_ms"] < med * (1 + excess):
            continue
        peers = [p for p in ranks if p["rank"] != r["rank"] and p.get("stage") == r.get("stage")] or ranks
        peer_comm = statistics.median(p["comm_ms"] for p in peers)
        yield Hit(
            message=(f"rank {r['rank']} is the slow rank: compute {r['compute_ms']:.1f} ms per step vs median "
                     f"{med:.1f} ms of its peers (+{_pct(r['compute_ms'] / med - 1)}, robust z {r['z_compute']:.1f}); "
                     f"the others wait for it in communication ({peer_comm:.1f} ms per step vs "
                     f"{r['comm_ms']:.1f} ms on rank {r['rank']})"),  # fmt: skip
            evidence=(_ev(_rank_line(r), "profile.ranks"), *(_ev(_rank_line(p), "profile.ranks") for p in peers[:2])),
            rank=r["rank"],
            data={"compute_ms": r["compute_ms"], "median_compute_ms": med, "z": r["z_compute"], "reason": "compute"},
        )


def _slow_of_two(ranks: list[dict[str, Any]], params: Mapping[str, Any]) -> Iterable[Hit]:
    """Two ranks: no robust statistics; the one that computes ≥ pair_excess more while the other
    waits ≥ min_wait_ms more in communication is the slow one (more waiting marks the victim)."""
    slow, fast = sorted(ranks, key=lambda r: -r["compute_ms"])
    if fast["compute_ms"] <= 0 or slow["compute_ms"] < fast["compute_ms"] * (1 + float(params["pair_excess"])):
        return
    wait = fast["comm_ms"] - slow["comm_ms"]
    if wait < float(params["min_wait_ms"]):
        return
    yield Hit(
        message=(f"rank {slow['rank']} is the slow rank of the two: compute {slow['compute_ms']:.1f} ms per step vs "
                 f"{fast['compute_ms']:.1f} ms on rank {fast['rank']} (+{_pct(slow['compute_ms'] / fast['compute_ms'] - 1)}); "
                 f"rank {fast['rank']} waits {wait:.1f} ms more per step in communication"),  # fmt: skip
        evidence=(_ev(_rank_line(slow), "profile.ranks"), _ev(_rank_line(fast), "profile.ranks")),
        rank=slow["rank"],
        data={"compute_ms": slow["compute_ms"], "median_compute_ms": fast["compute_ms"], "reason": "compute",
              "peer_wait_ms": round(wait, 3)},  # fmt: skip
    )


@check_params(min_ms=float, ratio=float, z=float)
def free_time(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """PERF303: idle device time (host-bound) on a rank, or on all of them."""
    ranks = facts.need("profile.ranks")
    zmin, ratio, min_ms = float(params["z"]), float(params["ratio"]), float(params["min_ms"])
    outliers = [r for r in ranks if len(ranks) >= 3 and r["z_free"] >= zmin
                and r["free_ms"] - r["median_free_ms"] >= min_ms]  # fmt: skip
    for r in outliers:
        yield Hit(
            message=(f"rank {r['rank']} has {r['free_ms']:.1f} ms of free (idle) time per step vs median "
                     f"{r['median_free_ms']:.1f} ms (robust z {r['z_free']:.1f}): its host feeds the device late"),
            evidence=(_ev(_rank_line(r), "profile.ranks"),),
            rank=r["rank"],
            data={"free_ms": r["free_ms"], "median_free_ms": r["median_free_ms"], "reason": "free"},
        )
    high = [r for r in ranks if r["free_ratio"] >= ratio and r not in outliers]
    if high and len(high) == len(ranks):
        mean = statistics.fmean(r["free_ratio"] for r in ranks)
        yield Hit(
            message=(f"free (idle) time is {_pct(mean)} of compute + exposed comm + free on every rank "
                     f"({_ranges(r['rank'] for r in high)}); threshold {_pct(ratio)}: the device waits for the host"),
            evidence=tuple(_ev(_rank_line(r), "profile.ranks") for r in sorted(high, key=lambda r: -r["free_ratio"])[:3]),
            data={"mean_free_ratio": round(mean, 4)},
        )


@check_params(share=float)
def dominant_op(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """PERF304: one operator type takes most of the kernel time."""
    ops = facts.need("profile.top_ops")
    if not ops or ops[0]["share"] < float(params["share"]):
        return
    top = ops[0]
    yield Hit(
        message=(f"{top['op']} takes {_pct(top['share'])} of all operator time ({top['total_ms']:.1f} ms over "
                 f"{top['count']} calls on {top['ranks']} rank(s)); optimise it first"),
        evidence=tuple(_ev(f"{o['op']}: {o['total_ms']:.1f} ms, {_pct(o['share'])}, {o['count']} calls", "profile.top_ops")
                       for o in ops[:5]),  # fmt: skip
        data={"op": top["op"], "share": top["share"]},
    )


@check_params(slower=float)
def regression(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """PERF305: this run is slower than the baseline; by phase and by op."""
    cmp = facts.need("profile.compare")
    ph = cmp["phases"]
    step = ph["step_ms"]
    if not step["ratio"] or step["ratio"] < 1 + float(params["slower"]):
        return
    phases = sorted((k for k in ph if k not in ("step_ms", "comm_ratio")), key=lambda k: -ph[k]["delta"])
    worst = phases[0]
    ev = [_ev(f"{k}: {ph[k]['baseline']:.1f} → {ph[k]['current']:.1f} ms ({ph[k]['delta']:+.1f})", "profile.compare")
          for k in ["step_ms", *phases]]  # fmt: skip
    ev.append(_ev(f"comm ratio: {_pct(ph['comm_ratio']['baseline'])} → {_pct(ph['comm_ratio']['current'])}", "profile.compare"))
    ev += [_ev(f"op {o['op']}: {o['baseline_ms']:.1f} → {o['current_ms']:.1f} ms ({o['delta_ms']:+.1f})", "profile.compare")
           for o in cmp["ops"][:3] if o["delta_ms"] > 0]  # fmt: skip
    yield Hit(
        message=(f"step time {step['baseline']:.1f} → {step['current']:.1f} ms (+{_pct(step['ratio'] - 1)}) against "
                 f"the baseline; most of it is {worst} ({ph[worst]['delta']:+.1f} ms)"),
        evidence=tuple(ev),
        data={"step_ratio": step["ratio"], "phase": worst},
    )


def loss_line(r: dict[str, Any]) -> str:
    """One line on what a truncated trace lost (events, steps, collectives) — shared with PERF306."""
    peers = f" vs {r['peer_events']:.0f} on the other ranks" if r.get("peer_events") else ""
    parts = [f"read up to its last complete event ({r['events_read']} events{peers}; "
             f"{r['dropped_bytes']} bytes of a partial event dropped)" if "events_read" in r else
             f"read up to its last complete event ({r['dropped_bytes']} bytes dropped)"]  # fmt: skip
    if r.get("steps_lost"):
        parts.append(f"{r['steps_read']} step(s) vs {r['peer_steps']:.0f} on the other ranks")
    if r.get("collectives_lost"):
        ref = ("its communication.json" if "collectives_in_communication_json" in r else "the other ranks' traces")
        parts.append(f"{r['collectives_lost']} collective(s) missing ({100 * r['collectives_lost_share']:.0f} % of "
                     f"what {ref} holds)")  # fmt: skip
    if r.get("collectives_lost") or r.get("steps_lost"):
        touched = r.get("analyses_touched")
        parts.append("affects: " + ", ".join(touched) if touched else
                     "no analysis uses this trace for it (step_trace_time.csv, communication.json and "
                     "kernel_details.csv cover the rank)")  # fmt: skip
    return "; ".join(parts)


@check_params()
def profile_files(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """PERF306: profiler files skipped (unknown format, unreadable) or recovered from truncation."""
    files = facts.need("profile.files")
    for s in files["skipped"]:
        yield Hit(message=f"skipped {s['path']}: {s['reason']}", evidence=(_ev(s["reason"], "profile.files"),),
                  rank=s.get("rank"), data=s)  # fmt: skip
    for r in files["recovered"]:
        yield Hit(
            message=f"{r['path']} was cut short (profiler killed mid-write?): {loss_line(r)}",
            evidence=(_ev(f"dropped {r['dropped_bytes']} bytes at the end", "profile.files"),),
            rank=r["rank"],
            data=r,
        )


@check_params(ratio=float, min_mb=float)
def slow_link(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """COMM301: a link runs far below the bandwidth of its peers (communication matrix)."""
    # a link that moved almost nothing (a few bytes of a broadcast) has no meaningful bandwidth
    min_mb = float(params.get("min_mb", 1.0))
    links = [x for x in facts.need("profile.links") if x["size_mb"] >= min_mb and x["time_ms"] > 0]
    if len(links) < 2:
        return
    ratio = float(params["ratio"])
    cluster = statistics.median(x["bandwidth_gbps"] for x in links)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for x in links:
        by_group.setdefault(x["group"], []).append(x)
    for x in sorted(links, key=lambda x: x["bandwidth_gbps"]):
        peers = by_group[x["group"]]
        ref = statistics.median(p["bandwidth_gbps"] for p in peers) if len(peers) >= 3 else cluster
        if x["bandwidth_gbps"] >= ratio * ref:
            continue
        src = "?" if x["src"] is None else x["src"]
        dst = "?" if x["dst"] is None else x["dst"]
        others = sorted({p["transport"] for p in peers if p is not x})
        yield Hit(
            message=(f"link {src}→{dst} ({x['transport']}, group {x['group_name'] or x['group']}) moves data at "
                     f"{x['bandwidth_gbps']:.1f} GB/s vs {ref:.1f} GB/s median of its peers "
                     f"({x['bandwidth_gbps'] / ref:.2f}×)"
                     + (f"; the other links use {', '.join(others)}" if others and x["transport"] not in others else "")),
            evidence=(_ev(f"{src}→{dst} {x['transport']}: {x['size_mb']:.1f} MB in {x['time_ms']:.1f} ms over "
                          f"{x['steps']} step(s)", "profile.links"),),  # fmt: skip
            rank=x["src"],
            data={"src": x["src"], "dst": x["dst"], "transport": x["transport"], "bandwidth_gbps": x["bandwidth_gbps"],
                  "reference_gbps": round(ref, 3)},  # fmt: skip
        )


@check_params(min_excess_ms=float, min_steps=int, ratio=float, types=list)
def comm_spikes(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """COMM302: a collective takes far longer in some steps than in its usual step (per rank)."""
    totals = facts.need("profile.comm_step_totals")
    kinds = set(params["types"])
    ratio, excess = float(params["ratio"]), float(params["min_excess_ms"])
    series: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for t in totals:
        if t["type"] in kinds:
            series.setdefault((t["type"], t["rank"]), []).append(t)
    spikes: dict[tuple[str, int], list[tuple[int, float, float]]] = {}
    for (typ, rank), rows in series.items():
        if len(rows) < int(params["min_steps"]):
            continue
        med = statistics.median(r["ms"] for r in rows)
        for r in rows:
            if r["ms"] >= ratio * med and r["ms"] - med >= excess:
                spikes.setdefault((typ, r["step"]), []).append((rank, r["ms"], med))
    ops = {o["type"]: o for o in facts.get_known("profile.comm_ops", []) or []}
    for (typ, step), hits in sorted(spikes.items()):
        ranks = [h[0] for h in hits]
        top = max(hits, key=lambda h: h[1] - h[2])
        o = ops.get(typ)
        ev = [_ev(f"rank {rk}: {ms:.1f} ms vs median {med:.1f} ms", "profile.comm_step_totals")
              for rk, ms, med in sorted(hits, key=lambda h: h[2] - h[1])[:4]]  # fmt: skip
        if o:
            ev.append(_ev(f"{typ} per op: p50 {o['p50_ms']:.1f} ms, p99 {o['p99_ms']:.1f} ms, max {o['max_ms']:.1f} ms "
                          f"(rank {o['max_rank']}, step {o['max_step']})", "profile.comm_ops"))  # fmt: skip
        yield Hit(
            message=(f"{typ} spiked in step {step}: {top[1]:.1f} ms vs a median of {top[2]:.1f} ms per step "
                     f"(+{top[1] - top[2]:.1f} ms) on {len(ranks)} rank(s) ({_ranges(ranks)})"),
            evidence=tuple(ev),
            rank=top[0] if len(ranks) == 1 else None,
            step=step,
            data={"type": typ, "ranks": ranks, "spike_ms": round(top[1], 3), "median_ms": round(top[2], 3)},
        )


@check_params(ratio=float, sendrecv_share=float)
def stage_imbalance(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """PAR301: pipeline stages with unequal compute, the others waiting in Send/Recv."""
    stages = facts.need("profile.stages")
    if len(stages) < 2:
        return
    heavy = max(stages, key=lambda s: s["compute_ms"])
    light = min(stages, key=lambda s: s["compute_ms"])
    imb = heavy["compute_ms"] / light["compute_ms"] if light["compute_ms"] else 0.0
    waiting = max(stages, key=lambda s: s["sendrecv_share"])
    if imb < float(params["ratio"]) and waiting["sendrecv_share"] < float(params["sendrecv_share"]):
        return
    mean = statistics.fmean(s["compute_ms"] for s in stages)
    move = (heavy["compute_ms"] - mean) / heavy["compute_ms"] if heavy["compute_ms"] else 0.0
    yield Hit(
        message=(f"pipeline stage {heavy['stage']} (ranks {_ranges(heavy['ranks'])}) computes {heavy['compute_ms']:.1f} ms "
                 f"per step vs {light['compute_ms']:.1f} ms on stage {light['stage']} ({imb:.2f}×); stage "
                 f"{waiting['stage']} waits {waiting['sendrecv_ms']:.1f} ms per step in Send/Recv "
                 f"({_pct(waiting['sendrecv_share'])} of the step). Moving about {_pct(move)} of stage "
                 f"{heavy['stage']}'s layers to the lighter stages balances them"),
        evidence=tuple(_ev(f"stage {s['stage']} (ranks {_ranges(s['ranks'])}): compute {s['compute_ms']:.1f} ms, "
                           f"Send/Recv {s['sendrecv_ms']:.1f} ms ({_pct(s['sendrecv_share'])})", "profile.stages")
                       for s in stages),  # fmt: skip
        data={"heavy_stage": heavy["stage"], "ratio": round(imb, 4), "move_share": round(move, 4),
              "max_sendrecv_share": waiting["sendrecv_share"]},  # fmt: skip
    )


@check_params(min_ms=float, share=float)
def data_gaps(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """DATA301: the device idles at the start of steps waiting for the next batch."""
    gaps = facts.need("profile.data_gaps")
    share, min_ms = float(params["share"]), float(params["min_ms"])
    bad = [g for g in gaps if g["share"] >= share and g["mean_ms"] >= min_ms]
    if not bad:
        return
    worst = max(bad, key=lambda g: g["share"])
    all_ranks = len(bad) == len(gaps)
    yield Hit(
        message=(f"{'every rank' if all_ranks else 'rank(s) ' + _ranges(g['rank'] for g in bad)} waits "
                 f"{worst['mean_ms']:.1f} ms per step ({_pct(worst['share'])} of the step) before its first kernel; "
                 f"longest {worst['max_ms']:.1f} ms at step {worst['max_step']} on rank {worst['rank']}"),
        evidence=tuple(_ev(f"rank {g['rank']}: mean {g['mean_ms']:.1f} ms, max {g['max_ms']:.1f} ms (step {g['max_step']})",
                           "profile.data_gaps") for g in sorted(bad, key=lambda g: -g["share"])[:4]),  # fmt: skip
        rank=None if all_ranks else worst["rank"],
        step=worst["max_step"],
        data={"ranks": [g["rank"] for g in bad], "share": worst["share"]},
    )
