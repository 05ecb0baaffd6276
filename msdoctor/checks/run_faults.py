"""COMM202 a rank that vanished (killed, crashed below Python), COMM203 an exception raised in a rank."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from msdoctor.checks.run_common import clock, num, position
from msdoctor.engine.facts import Facts, Missing
from msdoctor.engine.model import Evidence, Hit, check_params

# -- COMM202: crashed rank; COMM203: exception in a rank ----------------------------------------------


def _failed_at(ranks: Mapping[str, Any], exceptions: Mapping[str, Any], k: str) -> float | None:
    r = ranks[k]
    ts = [float(e["t"]) for e in exceptions.get(k) or [] if num(e.get("t")) is not None]
    if r.get("end_status") not in (None, "ok") and r.get("ended") is not None:
        ts.append(float(r["ended"]))
    return min(ts) if ts else None


@check_params(grace_s=float, hung_s=float)
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
        return position(r), float(r.get("last_progress_t") or 0.0)

    first_stop = min((stop_key(r) for r in vanished.values()), default=None)
    # msrun names the worker it saw exit first: that one crashed, the ones it then killed did not —
    # whatever their positions (under load the killed rank may be the one behind)
    launcher = facts.get_known("run.launcher", None) or {}
    first_pid = launcher.get("first_failed_pid")
    named = [k for k, r in vanished.items() if first_pid is not None and r.get("pid") == first_pid]
    for k, r in sorted(vanished.items(), key=lambda kv: int(kv[0])):
        if named and k not in named:
            continue
        if not named and stop_key(r) != first_stop:
            continue
        last = float(r.get("last_seen_t") or 0.0)
        if r.get("disk_full_t") is not None:
            continue  # its watchdog stopped on a full disk (ENV201): its end went unrecorded
        if exceptions.get(k):
            continue  # it raised (whichever hook recorded it): COMM203 names the exception, not a kill
        if last - float(r.get("last_progress_t") or last) >= float(params["hung_s"]):
            continue  # it had stopped progressing long before it vanished: COMM201 names the hang
        grace = float(params["grace_s"]) + 2 * float(r.get("heartbeat_s") or 1.0)
        earlier = [o for o in ranks if o != k and (_failed_at(ranks, exceptions, o) or math.inf) <= last + grace]
        if earlier:
            continue  # killed by the launcher after another rank failed: a consequence, not a crash
        step = (r["last_step"] + 1) if isinstance(r.get("last_step"), int) else 0
        how = "killed (OOM killer, SIGKILL) or crashed below Python (segfault, abort)"
        evidence = [
            Evidence(f"rank {k}: last event at phase {r.get('phase')!r}, last completed step {r.get('last_step')}, "
                     f"at {r.get('where')}", fact="run.ranks"),
            Evidence(f"process {r.get('pid')} on {r.get('host')} no longer exists", fact="run.ranks"),
        ]
        if named:
            code = launcher.get("code")
            how = (f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exited with code {code}") + \
                " — msrun saw it fail first and then killed the other ranks"
            evidence.append(Evidence(f"msrun: {launcher.get('line')}", fact="run.launcher"))
        yield Hit(
            message=f"rank {k} (pid {r.get('pid')}) vanished during step {step} without an end event: {how}",
            evidence=tuple(evidence),
            rank=int(k),
            step=step,
            data={"t": last, "pid": r.get("pid"), **({"launcher": launcher.get("line")} if named else {})},
        )


@cache
def _signatures() -> Any:
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import signature_set

    return signature_set(load_catalogue())


def classify(text: str) -> tuple[Any, str] | None:
    """The first catalogue signature rule that matches a line of ``text`` (exception message/traceback); a rule
    with a twin is its twin where the text names no parallel layout (msdoctor/facts/layout.py)."""
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.facts.layout import layout_named

    sigs = _signatures()
    for line in text.splitlines():
        for m in sigs.match(line):
            layout = layout_named(text.encode("utf-8", "replace"), []) is not None
            return load_catalogue().as_reported(m.rule, layout), line.strip()
    return None


@check_params()
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
        if e.get("source"):
            ev.append(Evidence(f"rank {k}: the exception was recorded by {e['source']}", fact="run.exceptions"))
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
                msg += f" — while waiting in phase {e.get('phase')!r} for rank {o}, which stopped progressing at {clock(since)}"
                ev.append(Evidence(f"rank {o} made no progress from {clock(since)} until this exception", fact="run.ranks"))
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


# -- ENV201: the disk under the run directory filled up -----------------------------------------------


@check_params(min_free_mib=float)
def disk_full(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    """A rank's watchdog recorded ENOSPC (then stopped), or the run directory's file system is full now."""
    ranks: dict[str, dict[str, Any]] = facts.need("run.ranks")
    disk = facts.get_known("run.disk", None) or {}
    free = disk.get("free")
    low = isinstance(free, (int, float)) and free < float(params["min_free_mib"]) * 2**20
    hit = False
    for k, r in sorted(ranks.items(), key=lambda kv: int(kv[0])):
        t = num(r.get("disk_full_t"))
        if t is None:
            continue
        hit = True
        ev = [Evidence(f"rank {k}: {r.get('disk_full_error')} at {clock(t)}, after step {r.get('last_step')}; "
                       "its watchdog stopped recording (training itself went on)", fact="run.ranks")]  # fmt: skip
        if isinstance(free, (int, float)):
            ev.append(Evidence(f"{disk.get('path')}: {free / 2**20:.1f} MiB free now", fact="run.disk"))
        yield Hit(message=f"the disk under the run directory is full: rank {k}'s watchdog could not write its events "
                          f"from {clock(t)} on (after step {r.get('last_step')}); its silence after that is not a hang "
                          "or a crash",  # fmt: skip
                  evidence=tuple(ev), rank=int(k), step=r.get("last_step"), data={"t": t})
    if low and not hit:
        yield Hit(message=f"the disk under the run directory has {float(free or 0) / 2**20:.1f} MiB free: events, findings and "
                          "checkpoints will be cut short",  # fmt: skip
                  evidence=(Evidence(f"{disk.get('path')}: {free} bytes free of {disk.get('total')}", fact="run.disk"),),
                  data={"free": free})
