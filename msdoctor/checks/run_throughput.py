"""PERF201 a straggler rank, DATA201 a data-loading stall, MEM201 host memory growth."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msdoctor.checks.run_common import fmt_s, mib, num, step_rows
from msdoctor.checks.stats import mad, median, sign_test_p, theil_sen
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Hit, check_params

# -- PERF201 straggler, DATA201 data stall ---------------------------------------------------------------


def _own_time(row: Mapping[str, Any]) -> float | None:
    """Step time the rank spent on its own work: minus the wait for the others and the data wait."""
    st = num(row.get("step_time"))
    if st is None:
        return None
    return max(0.0, st - (num(row.get("sync")) or 0.0) - (num(row.get("data_wait")) or 0.0))


def _onset(steps: list[int], flags: list[bool], frac: float = 0.8) -> int | None:
    """First step from which at least ``frac`` of the remaining steps are flagged."""
    n = len(flags)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + flags[i]
    for i in range(n):
        if flags[i] and suffix[i] >= frac * (n - i):
            return steps[i]
    return None


@check_params(k_mad=float, min_excess_s=float, min_points=int, min_rel=float, noise_floor_s=float, sign_p=float, skip_steps=int, window=int)
def straggler(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    series = facts.need("run.series")
    if len(series) < 2:
        return
    own: dict[str, dict[int, float]] = {}
    step_t: list[float] = []
    for k in series:
        own[k] = {}
        for row in step_rows(facts, k)[int(params["skip_steps"]):]:
            v = _own_time(row)
            if v is not None:
                own[k][row["step"]] = v
            st = num(row.get("step_time"))
            if st is not None:
                step_t.append(st)
    common = sorted(set.intersection(*(set(v) for v in own.values())))
    if len(common) < int(params["min_points"]):
        return
    window = common[-int(params["window"]):]
    meds = {k: median([own[k][s] for s in window]) for k in own}
    fastest = min(meds, key=lambda k: (meds[k], int(k)))
    typical = median(step_t[-200:]) if step_t else 0.0
    across_med, across_mad = median(list(meds.values())), mad(list(meds.values()))
    for k in sorted(own, key=int):
        if k == fastest:
            continue
        d = [own[k][s] - own[fastest][s] for s in window]
        excess, noise = median(d), mad(d)
        score = excess / max(noise, float(params["noise_floor_s"]))
        # persistent: slower than the fastest rank on more steps than chance allows (a sign test,
        # which survives the heavy-tailed noise of shared hosts where the MAD alone is too wide)
        slower = sum(1 for x in d if x > 0)
        p_sign = sign_test_p(slower, len(d))
        persistent = slower / len(d)
        if excess < max(float(params["min_excess_s"]), float(params["min_rel"]) * typical):
            continue
        if score < float(params["k_mad"]) and p_sign > float(params["sign_p"]):
            continue
        if len(own) >= 3 and (meds[k] - across_med) < float(params["k_mad"]) * max(across_mad, float(params["noise_floor_s"])):
            continue  # with three or more ranks it must also stand out from the median rank
        d_all = [own[k][s] - own[fastest][s] for s in common]
        onset = _onset(common, [x >= excess / 2 for x in d_all]) or window[0]
        yield Hit(
            message=(
                f"rank {k} is a straggler from step {onset}: its own work takes {fmt_s(excess)} more per step "
                f"than the fastest rank {fastest} (median over {len(window)} steps), "
                "and every other rank waits that long in the collective"
            ),
            evidence=(
                Evidence(f"rank {k}: median own time {fmt_s(meds[k])} per step vs rank {fastest}: {fmt_s(meds[fastest])} "
                         "(step time minus collective wait and data wait)", fact="run.series"),
                Evidence(f"difference to rank {fastest}: median {fmt_s(excess)}, MAD {fmt_s(noise)}, "
                         f"slower on {slower} of {len(d)} steps (sign test p={p_sign:.3f})", fact="run.series"),
            ),
            rank=int(k),
            step=onset,
            data={"excess_s": excess, "score": score, "persistent": persistent, "sign_p": p_sign, "fastest": int(fastest)},
        )


@check_params(min_points=int, min_share=float, min_wait_s=float, skip_steps=int, window=int)
def data_stall(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    share_min, w = float(params["min_share"]), int(params["window"])
    for k in sorted(facts.need("run.series"), key=int):
        rows = [r for r in step_rows(facts, k)[int(params["skip_steps"]):] if num(r.get("data_wait")) is not None and num(r.get("step_time"))]
        if len(rows) < int(params["min_points"]):
            continue
        shares = [num(r["data_wait"]) / num(r["step_time"]) for r in rows]  # type: ignore[operator]
        recent = shares[-w:]
        m = median(recent)
        waits = [num(r["data_wait"]) or 0.0 for r in rows[-w:]]
        if m < share_min or median(waits) < float(params["min_wait_s"]):
            continue
        onset = _onset([r["step"] for r in rows], [s >= share_min for s in shares]) or rows[-len(recent)]["step"]
        yield Hit(
            message=f"rank {k} waits for data {m:.0%} of each step (median over {len(recent)} steps) from step {onset}",
            evidence=(Evidence(f"rank {k}: data wait median {fmt_s(median(waits))} of step time "
                               f"{fmt_s(median([num(r['step_time']) or 0.0 for r in rows[-w:]]))}", fact="run.series"),),
            rank=int(k),
            step=onset,
            data={"share": m, "t": num(next(r for r in rows if r["step"] == onset).get("t"))},
        )


# -- MEM201 host memory growth ---------------------------------------------------------------------------


@check_params(min_growth_mib=float, min_points=int, min_rel=float, min_steady=float, skip_steps=int)
def memory_growth(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    host = facts.get_known("run.host_mem") or {}
    for k in sorted(facts.need("run.series"), key=int):
        pts = [(r["step"], num(r.get("rss")), num(r.get("t"))) for r in step_rows(facts, k)]
        pts = [(s, m, t) for s, m, t in pts if m is not None]
        pts = pts[max(int(params["skip_steps"]), len(pts) // 5):]  # compile / warm-up allocations settle first
        if len(pts) < int(params["min_points"]):
            continue
        xs, ys = [float(p[0]) for p in pts], [float(p[1] or 0.0) for p in pts]
        slope = theil_sen(xs, ys)
        growth = slope * (xs[-1] - xs[0])
        diffs = [b - a for a, b in zip(ys, ys[1:], strict=False) if b != a]
        steady = sum(1 for d in diffs if d > 0) / len(diffs) if diffs else 0.0
        if growth < float(params["min_growth_mib"]) * 2**20 or growth < float(params["min_rel"]) * ys[0] or steady < float(params["min_steady"]):
            continue
        avail = host.get("available")
        exhaust = f"; at this rate the {mib(avail)} still available on the host last until step {int(xs[-1] + avail / slope)}" if avail else ""
        yield Hit(
            message=f"host memory of rank {k} grows steadily by {mib(slope)} per step "
                    f"({mib(ys[0])} → {mib(ys[-1])} over steps {int(xs[0])}–{int(xs[-1])}){exhaust}",
            evidence=(Evidence(f"rank {k}: RSS robust slope {mib(slope)}/step over {len(pts)} steps, "
                               f"{steady:.0%} of changes upward", fact="run.series"),),
            rank=int(k),
            step=int(xs[0]),
            data={"slope_bytes_per_step": slope, "t": pts[0][2],
                  "exhaust_step": int(xs[-1] + avail / slope) if avail else None},
        )
