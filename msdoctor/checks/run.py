"""Live-run checks (rules with ids 201–299, source "run") over the ``run.*`` facts of the events.

Pure functions of the facts (``msdoctor/facts/run.py`` builds them): the supervisor evaluates them
every poll while the job runs, ``msdoctor watch`` / ``report`` once post-mortem. Every hit carries
``data["t"]``, the time of the anomaly, so the closing report can order the first anomaly per rank.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from msdoctor.engine.facts import Facts, Missing
from msdoctor.engine.model import Evidence, Hit
from msdoctor.watch.stats import mad, median, sign_test_p, theil_sen
from msdoctor.watch.watchdog import number as num

# Order of the phases inside one step: a rank further along waits for one that is behind.
PHASE_ORDER = {"step-done": 0, "data": 1, "forward": 3, "backward": 4, "step": 5, "collective": 6, "allreduce": 6, "optimizer": 7, "save": 8, "checkpoint": 8}
FRAMEWORK_MARKERS = ("/mindspore/", "\\mindspore\\")


def _fmt_s(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.1f} s"


def _clock(t: Any) -> str:
    """Wall-clock time of an event (UTC), stable across polls unlike a growing duration."""
    import datetime as dt

    x = num(t)
    return "?" if x is None else dt.datetime.fromtimestamp(x, dt.UTC).strftime("%H:%M:%S UTC")


def _mib(x: float) -> str:
    return f"{x / 2**20:.1f} MiB"


# rows of the newest snapshot only (Facts is a mapping, unhashable): every rule of one evaluation
# shares them, the next snapshot replaces them
_ROWS: list[Any] = [None, None, {}]


def _rows(facts: Facts, rank: str) -> list[dict[str, Any]]:
    """The step series of one rank as rows (one dict per step), built once per snapshot."""
    series = facts.need("run.series")
    if _ROWS[0] is None or _ROWS[0]() is not facts or _ROWS[1] is not series:
        _ROWS[0], _ROWS[1], _ROWS[2] = weakref.ref(facts), series, {}
    cache: dict[str, list[dict[str, Any]]] = _ROWS[2]
    if rank not in cache:
        cols = series.get(rank) or {}
        steps = cols.get("step") or []
        cache[rank] = [{c: (vals[i] if i < len(vals) else None) for c, vals in cols.items()} for i in range(len(steps))]
    return cache[rank]


def _is_framework(where: str | None) -> bool:
    return where is not None and any(m in where for m in FRAMEWORK_MARKERS)


# -- COMM201: hung rank ---------------------------------------------------------------------------


def _position(r: Mapping[str, Any]) -> tuple[int, int]:
    """(step in progress, phase order within it) of a rank: who is furthest behind."""
    last = r.get("last_step")
    phase = r.get("phase") or ""
    ps = r.get("phase_step")
    if phase == "step-done" or ps is None:
        return ((last + 1) if isinstance(last, int) else 0, 0)
    return (ps, PHASE_ORDER.get(phase, 2))


def hung_rank(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    ranks: dict[str, dict[str, Any]] = facts.need("run.ranks")
    now = float(facts.need("run.now"))
    stacks = facts.get_known("run.stacks", {}) or {}
    active = {k: r for k, r in ranks.items() if r.get("ended") is None and r.get("started") is not None}
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
    pos = {k: _position(r) for k, r in active.items()}
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
        outside = [k for k in candidates if not _is_framework(where_of(k))]
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
                f"{_clock(r0.get('last_progress_t'))} and none is behind the others: a collective every rank waits "
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
                f"rank {k}: no progress since {_clock(r.get('last_progress_t'))} (over the {threshold:.0f} s threshold) "
                f"in phase {r.get('phase')!r} of step {pos[k][0]}; last completed step {r.get('last_step')}",
                fact="run.ranks",
            ),
            Evidence(f"rank {k} main thread at {where_of(k)}", fact="run.ranks"),
        ]
        if stack:
            frames = stack.get("frames") or []
            user = next((f for f in frames if not _is_framework(f) and "/msdoctor/watch/" not in f), None)
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
        return f"collective time-out ({ct.get('source')}: {_fmt_s(float(ct['seconds']))}, {ct.get('backend')})"
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


# -- COMM202: crashed rank; COMM203: exception in a rank ----------------------------------------------


def _failed_at(ranks: Mapping[str, Any], exceptions: Mapping[str, Any], k: str) -> float | None:
    r = ranks[k]
    ts = [float(e["t"]) for e in exceptions.get(k) or [] if num(e.get("t")) is not None]
    if r.get("end_status") not in (None, "ok") and r.get("ended") is not None:
        ts.append(float(r["ended"]))
    return min(ts) if ts else None


def crashed_rank(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    ranks: dict[str, dict[str, Any]] = facts.need("run.ranks")
    job = facts.get_known("run.job", {}) or {}
    exceptions = facts.get_known("run.exceptions", {}) or {}
    if job.get("stopped_by_supervisor"):
        return  # the supervisor killed the job itself (after naming a hung rank)
    if all(r.get("alive") is None and r.get("ended") is None for r in ranks.values()):
        raise Missing("run.ranks", "process liveness unknown (ranks on another host, or no psutil)")
    vanished = {
        k: r for k, r in ranks.items() if r.get("ended") is None and r.get("alive") is False and r.get("started") is not None
    }
    # the rank that stopped progressing first is the origin; ranks still progressing after it were
    # killed by the launcher when it noticed (msrun tears the job down after a worker's death)
    def stop_key(r: Mapping[str, Any]) -> tuple[tuple[int, int], float]:
        return _position(r), float(r.get("last_progress_t") or 0.0)

    first_stop = min((stop_key(r) for r in vanished.values()), default=None)
    for k, r in sorted(vanished.items(), key=lambda kv: int(kv[0])):
        if stop_key(r) != first_stop:
            continue
        last = float(r.get("last_seen_t") or 0.0)
        if exceptions.get(k):
            continue  # it raised (whichever hook recorded it): COMM203 names the exception, not a kill
        if last - float(r.get("last_progress_t") or last) >= float(params["hung_s"]):
            continue  # it had stopped progressing long before it vanished: COMM201 names the hang
        grace = float(params["grace_s"]) + 2 * float(r.get("heartbeat_s") or 1.0)
        earlier = [o for o in ranks if o != k and (_failed_at(ranks, exceptions, o) or math.inf) <= last + grace]
        if earlier:
            continue  # killed by the launcher after another rank failed: a consequence, not a crash
        step = (r["last_step"] + 1) if isinstance(r.get("last_step"), int) else 0
        yield Hit(
            message=(
                f"rank {k} (pid {r.get('pid')}) vanished during step {step} without an end event: killed "
                "(OOM killer, SIGKILL) or crashed below Python (segfault, abort)"
            ),
            evidence=(
                Evidence(f"rank {k}: last event at phase {r.get('phase')!r}, last completed step {r.get('last_step')}, "
                         f"at {r.get('where')}", fact="run.ranks"),
                Evidence(f"process {r.get('pid')} on {r.get('host')} no longer exists", fact="run.ranks"),
            ),
            rank=int(k),
            step=step,
            data={"t": last, "pid": r.get("pid")},
        )


@cache
def _signatures() -> Any:
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import SignatureSet

    return SignatureSet(load_catalogue().select(kind="signature"))


def classify(text: str) -> tuple[Any, str] | None:
    """The first catalogue signature rule that matches a line of ``text`` (exception message/traceback)."""
    sigs = _signatures()
    for line in text.splitlines():
        for m in sigs.match(line):
            return m.rule, line.strip()
    return None


def exception_raised(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    exceptions: dict[str, list[dict[str, Any]]] = facts.need("run.exceptions")
    for k, excs in sorted(exceptions.items(), key=lambda kv: int(kv[0])):
        if not excs:
            continue
        e = excs[0]
        head = f"{e.get('type')}: {str(e.get('message', '')).strip().splitlines()[0] if e.get('message') else ''}"
        text = f"{e.get('type')}: {e.get('message', '')}\n{e.get('traceback', '')}"
        cls = classify(text)
        ev = [Evidence(head[:400], fact="run.exceptions")]
        data: dict[str, Any] = {"t": num(e.get("t")), "type": e.get("type")}
        msg = f"rank {k} raised {head[:200]} at step {e.get('step')}"
        if cls is not None:
            rule, line = cls
            msg += f" — {rule.id}: {rule.title}"
            ev.append(Evidence(f"matches {rule.id} ({rule.role}): {line[:300]}"))
            ev.append(Evidence(f"{rule.id} fix: {' '.join(rule.fix.split())[:400]}"))
            data.update(classified_as=rule.id, role=rule.role)
        else:
            data["role"] = "root"
            blocker = _stopped_before(facts, k, e)
            if blocker is not None:
                # raised while waiting in a collective for a rank that had stopped: a consequence
                o, since = blocker
                data.update(role="consequence", waiting_for=int(o))
                msg += f" — while waiting in phase {e.get('phase')!r} for rank {o}, which stopped progressing at {_clock(since)}"
                ev.append(Evidence(f"rank {o} made no progress from {_clock(since)} until this exception", fact="run.ranks"))
        yield Hit(message=msg, evidence=tuple(ev), rank=int(k), step=e.get("step"), data=data)


def _stopped_before(facts: Facts, k: str, e: Mapping[str, Any]) -> tuple[str, float] | None:
    """Another rank that stopped progressing well before this rank's exception (in a waiting phase)."""
    if e.get("phase") not in ("collective", "step", "allreduce", "sync") or num(e.get("t")) is None:
        return None
    ranks = facts.get_known("run.ranks", {}) or {}
    t = float(e["t"])
    for o, r in sorted(ranks.items(), key=lambda kv: int(kv[0])):
        since = num(r.get("last_progress_t"))
        if o == k or since is None or (r.get("ended") is not None and float(r["ended"]) <= t):
            continue
        if t - since >= 5.0 and (num(r.get("last_seen_t")) or 0.0) >= since:
            return o, since
    return None


# -- NUM201 non-finite, NUM202 loss spike, NUM203 underflow / loss-scale collapse -----------------------


def nonfinite(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    firsts = []
    for k in facts.need("run.series"):
        for row in _rows(facts, k):
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


def loss_spike(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    w, k_mad, ratio = int(params["window"]), float(params["k_mad"]), float(params["min_ratio"])
    for k in sorted(facts.need("run.series"), key=int):
        hist: list[float] = []
        for row in _rows(facts, k):
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


def grad_underflow(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    tiny, run_n = float(params["zero_norm"]), int(params["min_steps"])
    for k in sorted(facts.need("run.series"), key=int):
        rows = _rows(facts, k)
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


# -- PAR201 replica divergence, PAR202 replicas initialised differently ---------------------------------


def _differs(a: Sequence[Any], b: Sequence[Any], rtol: float) -> bool:
    for x, y in zip(a, b, strict=False):
        fx, fy = num(x), num(y)
        if fx is None or fy is None:
            return x != y
        if not (math.isfinite(fx) and math.isfinite(fy)):
            return str(x) != str(y)
        if abs(fx - fy) > rtol * max(abs(fx), abs(fy), 1e-12):
            return True
    return False


def _diff_params(sums: dict[str, dict[str, Any]], rtol: float) -> dict[str, list[str]]:
    """{rank: [parameters whose checksum differs from the majority of ranks]} at one step."""
    out: dict[str, list[str]] = {}
    names = sorted(set().union(*(set(s) for s in sums.values())))
    ranks = sorted(sums, key=int)
    for name in names:
        have = [r for r in ranks if name in sums[r]]
        if len(have) < 2:
            continue
        # reference: the value most ranks agree with; ties go to the lowest rank (rank 0 broadcasts)
        groups: list[list[str]] = []
        for r in have:
            for g in groups:
                if not _differs(sums[g[0]][name], sums[r][name], rtol):
                    g.append(r)
                    break
            else:
                groups.append([r])
        groups.sort(key=lambda g: (-len(g), int(g[0])))
        for g in groups[1:]:
            for r in g:
                out.setdefault(r, []).append(name)
    return out


def _checksum_steps(facts: Facts) -> tuple[dict[str, dict[str, Any]], list[str]]:
    cks: dict[str, dict[str, Any]] = facts.need("run.checksums")
    common = set.intersection(*(set(v) for v in cks.values())) if len(cks) > 1 else set()
    return cks, sorted(common, key=int)


def replica_divergence(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    cks, steps = _checksum_steps(facts)
    rtol = float(params["rtol"])
    at_init: dict[str, list[str]] = _diff_params({r: cks[r][steps[0]] for r in cks}, rtol) if steps and int(steps[0]) == 0 else {}
    for s in steps:
        if int(s) == 0:
            continue
        diff = _diff_params({r: cks[r][s] for r in cks}, rtol)
        for r, names in sorted(diff.items(), key=lambda kv: int(kv[0])):
            names = [n for n in names if n not in at_init.get(r, [])]  # already different at init: PAR202
            if not names:
                continue
            first = names[0]
            ev = [Evidence(f"step {s}: {n} rank {r} sum={cks[r][s][n][0]:.9g} vs the other ranks' "
                           f"{next(cks[o][s][n][0] for o in cks if o != r and n in cks[o][s]):.9g}", fact="run.checksums")
                  for n in names[:5]]
            yield Hit(
                message=f"rank {r}: {len(names)} parameter(s) drifted from the other replicas by step {s} "
                        f"({', '.join(names[:4])}{', …' if len(names) > 4 else ''}) although they were identical at init",
                evidence=tuple(ev),
                rank=int(r),
                step=int(s),
                data={"params": names, "first": first},
            )
        if diff:
            return


def replica_init_mismatch(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    cks, steps = _checksum_steps(facts)
    if not steps or int(steps[0]) != 0:
        raise Missing("run.checksums", "no step-0 checksum common to every rank")
    diff = _diff_params({r: cks[r]["0"] for r in cks}, float(params["rtol"]))
    total = len(next(iter(cks.values()))["0"])
    for r, names in sorted(diff.items(), key=lambda kv: int(kv[0])):
        yield Hit(
            message=f"rank {r} starts from different initial weights: {len(names)} of {total} parameters differ "
                    f"from the other replicas at step 0 ({', '.join(names[:4])}{', …' if len(names) > 4 else ''})",
            evidence=tuple(Evidence(f"step 0: {n} rank {r} sum={cks[r]['0'][n][0]:.9g}", fact="run.checksums") for n in names[:5]),
            rank=int(r),
            step=0,
            data={"params": names},
        )


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


def straggler(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    series = facts.need("run.series")
    if len(series) < 2:
        return
    own: dict[str, dict[int, float]] = {}
    step_t: list[float] = []
    for k in series:
        own[k] = {}
        for row in _rows(facts, k)[int(params["skip_steps"]):]:
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
                f"rank {k} is a straggler from step {onset}: its own work takes {_fmt_s(excess)} more per step "
                f"than the fastest rank {fastest} (median over {len(window)} steps), "
                "and every other rank waits that long in the collective"
            ),
            evidence=(
                Evidence(f"rank {k}: median own time {_fmt_s(meds[k])} per step vs rank {fastest}: {_fmt_s(meds[fastest])} "
                         "(step time minus collective wait and data wait)", fact="run.series"),
                Evidence(f"difference to rank {fastest}: median {_fmt_s(excess)}, MAD {_fmt_s(noise)}, "
                         f"slower on {slower} of {len(d)} steps (sign test p={p_sign:.3f})", fact="run.series"),
            ),
            rank=int(k),
            step=onset,
            data={"excess_s": excess, "score": score, "persistent": persistent, "sign_p": p_sign, "fastest": int(fastest)},
        )


def data_stall(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    share_min, w = float(params["min_share"]), int(params["window"])
    for k in sorted(facts.need("run.series"), key=int):
        rows = [r for r in _rows(facts, k)[int(params["skip_steps"]):] if num(r.get("data_wait")) is not None and num(r.get("step_time"))]
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
            evidence=(Evidence(f"rank {k}: data wait median {_fmt_s(median(waits))} of step time "
                               f"{_fmt_s(median([num(r['step_time']) or 0.0 for r in rows[-w:]]))}", fact="run.series"),),
            rank=int(k),
            step=onset,
            data={"share": m, "t": num(next(r for r in rows if r["step"] == onset).get("t"))},
        )


# -- MEM201 host memory growth ---------------------------------------------------------------------------


def memory_growth(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    host = facts.get_known("run.host_mem") or {}
    for k in sorted(facts.need("run.series"), key=int):
        pts = [(r["step"], num(r.get("rss")), num(r.get("t"))) for r in _rows(facts, k)]
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
        exhaust = f"; at this rate the {_mib(avail)} still available on the host last until step {int(xs[-1] + avail / slope)}" if avail else ""
        yield Hit(
            message=f"host memory of rank {k} grows steadily by {_mib(slope)} per step "
                    f"({_mib(ys[0])} → {_mib(ys[-1])} over steps {int(xs[0])}–{int(xs[-1])}){exhaust}",
            evidence=(Evidence(f"rank {k}: RSS robust slope {_mib(slope)}/step over {len(pts)} steps, "
                               f"{steady:.0%} of changes upward", fact="run.series"),),
            rank=int(k),
            step=int(xs[0]),
            data={"slope_bytes_per_step": slope, "t": pts[0][2],
                  "exhaust_step": int(xs[-1] + avail / slope) if avail else None},
        )
