"""PAR201 replicas that diverge, PAR202 replicas initialised differently (parameter checksums across ranks)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from msdoctor.checks.run_common import num
from msdoctor.engine.facts import Facts, Missing
from msdoctor.engine.model import Evidence, Hit, check_params

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


@check_params(rtol=float)
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


@check_params(rtol=float)
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
