"""NUM201 non-finite loss/gradients (first rank and step), NUM202 loss spike, NUM203 underflow / loss-scale collapse."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from msdoctor.checks.run_common import num, step_rows
from msdoctor.checks.stats import mad, median
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Hit, check_params

# -- NUM201 non-finite, NUM202 loss spike, NUM203 underflow / loss-scale collapse -----------------------


@check_params()
def nonfinite(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    firsts = []
    for k in facts.need("run.series"):
        for row in step_rows(facts, k):
            bad = [c for c in ("loss", "grad_norm") if (x := num(row.get(c))) is not None and not math.isfinite(x)]
            if bad:
                # within one step the loss (local) goes bad before the gradients (all-reduced)
                firsts.append((row["step"], 0 if "loss" in bad else 1, num(row.get("t")) or 0.0, k, bad, row))
                break
    if not firsts:
        return
    firsts.sort(key=lambda f: (f[0], f[1], f[2]))
    step, _, t, k, bad, row = firsts[0]
    ranks = facts.get_known("run.ranks", {}) or {}
    now = num(facts.get_known("run.now")) or 0.0
    for r in ranks.values():
        # decide only once every live peer reported that step too: its loss may be the first bad one
        behind = not isinstance(r.get("last_step"), int) or r["last_step"] < step
        if behind and r.get("ended") is None and r.get("alive") and now - float(r.get("last_seen_t") or 0) < 10:
            return
    others = [f"rank {f[3]}: {', '.join(f[4])} non-finite from step {f[0]}" for f in firsts[1:]]
    yield Hit(
        message=f"{' and '.join(bad)} became non-finite first on rank {k} at step {step}",
        evidence=(
            Evidence(f"rank {k} step {step}: loss={row.get('loss')} grad_norm={row.get('grad_norm')} "
                     f"loss_scale={row.get('loss_scale')} overflow={row.get('overflow')}", fact="run.series"),
            *(Evidence(o, fact="run.series") for o in others),
        ),
        rank=int(k),
        step=step,
        data={"t": t, "columns": bad, "ranks": [int(f[3]) for f in firsts]},
    )


@check_params(k_mad=float, min_points=int, min_ratio=float, window=int)
def loss_spike(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    w, k_mad, ratio = int(params["window"]), float(params["k_mad"]), float(params["min_ratio"])
    for k in sorted(facts.need("run.series"), key=int):
        hist: list[float] = []
        for row in step_rows(facts, k):
            x = num(row.get("loss"))
            if x is None or not math.isfinite(x):
                continue
            if len(hist) >= int(params["min_points"]):
                m, s = median(hist[-w:]), mad(hist[-w:])
                if x > m + max(k_mad * s, (ratio - 1) * abs(m)):
                    yield Hit(
                        message=f"loss spiked on rank {k} at step {row['step']}: {x:.4g} against a median of {m:.4g}",
                        evidence=(Evidence(f"rank {k} step {row['step']}: loss {x:.4g}; previous {len(hist[-w:])} steps: "
                                           f"median {m:.4g}, MAD {s:.3g}", fact="run.series"),),
                        rank=int(k),
                        step=row["step"],
                        data={"t": num(row.get("t")), "loss": x, "median": m},
                    )
                    break
            hist.append(x)


@check_params(min_scale=float, min_steps=int, overflow_steps=int, scale_drop=float, zero_norm=float)
def grad_underflow(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    tiny, run_n = float(params["zero_norm"]), int(params["min_steps"])
    for k in sorted(facts.need("run.series"), key=int):
        rows = step_rows(facts, k)
        zero_run, over_run, seen_nonzero, top_scale = 0, 0, False, 0.0
        onset: int | None = None  # first step of the current bad stretch
        for row in rows:
            g, s, o = num(row.get("grad_norm")), num(row.get("loss_scale")), row.get("overflow")
            why = None
            if g is not None and math.isfinite(g):
                if g > tiny:
                    seen_nonzero, zero_run = True, 0
                elif seen_nonzero:
                    zero_run += 1
                    if zero_run >= run_n:
                        why = f"gradient norm {g:.3g} for {zero_run} steps after being non-zero"
            if s is not None and math.isfinite(s) and s > 0:
                top_scale = max(top_scale, s)
                if top_scale / s >= float(params["scale_drop"]) or (s <= float(params["min_scale"]) < top_scale):
                    why = why or f"loss scale fell from {top_scale:.6g} to {s:.6g}"
            over_run = over_run + 1 if o is True or o == 1 else 0
            if over_run >= int(params["overflow_steps"]):
                why = why or f"overflow flagged on {over_run} consecutive steps (every update skipped)"
            bad_now = (g is not None and math.isfinite(g) and g <= tiny and seen_nonzero) or (o is True or o == 1) or (
                s is not None and top_scale > 0 and s < top_scale
            )
            onset = (onset if onset is not None else row["step"]) if bad_now else None
            if why:
                step = onset if onset is not None else row["step"]
                yield Hit(
                    message=f"gradients underflow on rank {k} from step {step}: {why} (by step {row['step']})",
                    evidence=(Evidence(f"rank {k} step {row['step']}: grad_norm={row.get('grad_norm')} "
                                       f"loss_scale={row.get('loss_scale')} overflow={o}", fact="run.series"),),
                    rank=int(k),
                    step=step,
                    data={"t": num(row.get("t")), "why": why},
                )
                break
