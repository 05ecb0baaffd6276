"""COMM201: a hung rank — who stopped making progress while the others wait for it (heartbeats, stacks)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from msdoctor.checks.run_common import clock, fmt_s, is_framework, num, position
from msdoctor.checks.stats import median
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Hit, check_params

# -- COMM201: hung rank ---------------------------------------------------------------------------




@check_params(min_stall_s=float, slow_phase_stall_s=float, slow_phases=list, stall_steps=float, startup_stall_s=float)
def hung_rank(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    ranks: dict[str, dict[str, Any]] = facts.need("run.ranks")
    now = float(facts.need("run.now"))
    stacks = facts.get_known("run.stacks", {}) or {}
    # a rank whose watchdog stopped on a full disk (ENV201) is silent, not hung
    active = {k: r for k, r in ranks.items()
              if r.get("ended") is None and r.get("started") is not None and r.get("disk_full_t") is None}
    if not active:
        return
    step_times = [
        x for k in ranks for x in (num(v) for v in (facts.need("run.series").get(k, {}).get("step_time") or [])[-20:]) if x
    ]
    if step_times:
        threshold = max(float(params["min_stall_s"]), float(params["stall_steps"]) * median(step_times))
    else:  # nothing completed yet: the first step also compiles the graph, allow far longer
        threshold = float(params["startup_stall_s"])
    slow = set(params["slow_phases"])
    stalled: dict[str, float] = {}
    for k, r in active.items():
        until = now if r.get("alive") else float(r.get("last_seen_t") or now)
        since = float(r.get("last_progress_t") or r.get("started") or until)
        # a checkpoint save or an evaluation legitimately runs for many step times
        limit = max(threshold, float(params["slow_phase_stall_s"])) if r.get("phase") in slow else threshold
        if until - since >= limit:
            stalled[k] = until - since
    if not stalled:
        return
    pos = {k: position(r) for k, r in active.items()}
    behind = min(pos.values())
    candidates = [k for k in active if pos[k] == behind]

    def where_of(k: str) -> str | None:
        # a stack dumped after the rank stopped is authoritative; a heartbeat may be stale when a
        # blocking call holds the GIL
        st = stacks.get(k)
        if st and st.get("frames") and float(st.get("t") or 0) >= float(active[k].get("last_progress_t") or 0):
            return str(st["frames"][0])
        return active[k].get("where")

    if len(candidates) > 1:
        # at the same point of the same step: the ones inside the framework wait in the collective,
        # one outside it is not there yet
        outside = [k for k in candidates if not is_framework(where_of(k))]
        if outside and len(outside) < len(candidates):
            candidates = outside
    if len(candidates) > 1:
        fresh = {
            k: stacks[k]["frames"]
            for k in candidates
            if stacks.get(k) and stacks[k].get("frames")
            and float(stacks[k].get("t") or 0) >= float(active[k].get("last_progress_t") or 0)
        }
        if len(fresh) == len(candidates):
            candidates = stack_behind(fresh) or candidates
    if len(candidates) > 1 and len(active) > 1:
        # several ranks at the same point and nothing tells them apart (yet: the supervisor asks
        # for their stacks on this finding); a rank that is not stalled yet may still move on
        if not all(k in stalled for k in candidates):
            return
        k0 = candidates[0]
        r0 = active[k0]
        who = f"all {len(active)} ranks" if len(candidates) == len(active) else "ranks " + ", ".join(sorted(candidates, key=int))
        yield Hit(
            message=(
                f"{who} stopped at step {pos[k0][0]} in phase {r0.get('phase')!r} since "
                f"{clock(r0.get('last_progress_t'))} and none is behind the others: a collective every rank waits "
                "in, or the same hang in every rank"
            ),
            evidence=tuple(
                Evidence(f"rank {k}: phase {active[k].get('phase')!r} at {where_of(k)}, "
                         f"last step {active[k].get('last_step')}", fact="run.ranks")
                for k in sorted(active, key=int)
            ),
            rank=None,
            step=pos[k0][0],
            data={"t": float(r0.get("last_progress_t") or now), "stalled_s": round(stalled[k0], 1),
                  "ranks": [int(k) for k in candidates]},
        )
        return
    culprits = [k for k in candidates if k in stalled]
    if not culprits:
        return
    waiting = sorted((k for k in active if k not in culprits), key=int)
    for k in sorted(culprits, key=int):
        r = active[k]
        where = r.get("where_user") or r.get("where")
        stack = stacks.get(k)
        ev = [
            Evidence(
                f"rank {k}: no progress since {clock(r.get('last_progress_t'))} (over the {threshold:.0f} s threshold) "
                f"in phase {r.get('phase')!r} of step {pos[k][0]}; last completed step {r.get('last_step')}",
                fact="run.ranks",
            ),
            Evidence(f"rank {k} main thread at {where_of(k)}", fact="run.ranks"),
        ]
        if stack:
            frames = stack.get("frames") or []
            user = next((f for f in frames if not is_framework(f) and "/msdoctor/watch/" not in f), None)
            where = user or (frames[0] if frames else where)
            ev.append(Evidence(f"stack of rank {k} (faulthandler dump {stack.get('file')}): " + " <- ".join(frames[:6])))
        for w in waiting:
            wr = active[w]
            ev.append(
                Evidence(
                    f"rank {w} waits in phase {wr.get('phase')!r} of step {pos[w][0]} at {where_of(w)}: its "
                    f"{_timeout_words(wr.get('collective_timeout'))} will be a consequence",
                    fact="run.ranks",
                )
            )
        yield Hit(
            message=(
                f"rank {k} hung at step {pos[k][0]} ({r.get('phase')!r}) at {where}; "
                + (f"ranks {', '.join(waiting)} wait for it in a collective — their timeouts are consequences" if waiting else "")
            ).rstrip("; "),
            evidence=tuple(ev),
            rank=int(k),
            step=pos[k][0],
            data={
                "t": float(r.get("last_progress_t") or now),
                "culprit": int(k),
                "pid": r.get("pid"),
                "local": r.get("local"),
                "where": where,
                "stalled_s": round(stalled[k], 1),
                "waiting": [int(w) for w in waiting],
                "stack": bool(stack),
            },
        )


def _timeout_words(ct: Any) -> str:
    """The collective time-out a waiting rank really has (as its start event told), in words."""
    if isinstance(ct, dict) and isinstance(ct.get("seconds"), (int, float)):
        return f"collective time-out ({ct.get('source')}: {fmt_s(float(ct['seconds']))}, {ct.get('backend')})"
    return ("collective time-out (backend unknown: on CPU MS_CPU_COMM_OP_TIMEOUT, else MS_NODE_TIMEOUT, else 30 s; "
            "on Ascend HCCL_EXEC_TIMEOUT, 1836 s by default)")


def _frame(f: str) -> tuple[str, int, str]:
    """'file:line func' → (file, line, func)."""
    loc, _, func = f.rpartition(" ")
    file, _, line = loc.rpartition(":")
    return file, int(line) if line.isdigit() else -1, func


def stack_behind(frames: Mapping[str, Sequence[str]]) -> list[str] | None:
    """The ranks whose main thread is behind the others in the same code (None: cannot tell).

    Stacks are walked from the outermost frame; where they first differ in the line of the same
    function (the training loop's body), the lowest line has not reached the others' point yet —
    e.g. a rank hanging just before the all-reduce call the others are blocked in.
    """
    outer = {k: [_frame(f) for f in reversed(fs)] for k, fs in frames.items()}
    depth = 0
    while True:
        at = {k: fs[depth] for k, fs in outer.items() if depth < len(fs)}
        if len(at) < len(outer) or len({(f[0], f[2]) for f in at.values()}) > 1:
            return None  # one stack ends, or different functions at the same depth: no order
        lines = {k: f[1] for k, f in at.items()}
        if len(set(lines.values())) > 1:
            low = min(lines.values())
            return sorted((k for k, n in lines.items() if n == low), key=int)
        depth += 1
