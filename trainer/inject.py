"""``--inject KIND[:key=value,…]``: the faults the trainer can reproduce for real.

Parsing is plain Python (``msdoctor train`` validates the specs before launching anything); the
trainer asks :class:`Injections` what to do at each point of a step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class InjectError(ValueError):
    """A malformed ``--inject`` spec (unknown kind or key, value of the wrong type)."""


# kind -> (defaults, what it reproduces). ``rank`` is an int or "all".
KINDS: dict[str, tuple[dict[str, Any], str]] = {
    "nan": ({"rank": 1, "step": 3, "count": 1}, "non-finite loss and gradients on RANK from STEP for COUNT steps"),
    "hang": ({"rank": 1, "step": 3}, "RANK sleeps forever before its gradient all-reduce at STEP"),
    "straggler": ({"rank": 1, "ms": 300}, "RANK sleeps MS milliseconds in every step"),
    "shape": ({"rank": "all"}, "q and k disagree on the head split: MindSpore's own shape error"),
    "desync-layernorm": ({}, "LayerNorm gamma/beta left out of the gradient all-reduce: replicas drift"),
    "seed-mismatch": ({}, "set_seed(seed + rank): replicas start from different parameters"),
    "data-stall": ({"rank": 1, "ms": 150}, "RANK's dataset sleeps MS milliseconds per sample"),
    "mem-leak": ({"rank": 1, "mb": 16}, "RANK keeps MB more host memory every step"),
    "crash": ({"rank": 1, "step": 3, "code": 1}, "RANK exits with CODE at the start of STEP"),
}


@dataclass(frozen=True)
class Inject:
    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    def on(self, rank: int) -> bool:
        r = self.params.get("rank", "all")
        return r == "all" or r == rank

    def __getitem__(self, key: str) -> Any:
        return self.params[key]

    def spec(self) -> str:
        if not self.params:
            return self.kind
        return self.kind + ":" + ",".join(f"{k}={v}" for k, v in self.params.items())


def parse_inject(spec: str) -> Inject:
    """``nan:rank=1,step=3`` → Inject('nan', {'rank': 1, 'step': 3, 'count': 1})."""
    kind, _, rest = spec.strip().partition(":")
    if kind not in KINDS:
        raise InjectError(f"--inject {spec!r}: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    defaults, _ = KINDS[kind]
    params = dict(defaults)
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not value:
            raise InjectError(f"--inject {spec!r}: expected key=value, got {item!r}")
        if key not in defaults:
            allowed = ", ".join(defaults) or "none"
            raise InjectError(f"--inject {spec!r}: {kind} takes no {key!r} (keys: {allowed})")
        if key == "rank" and value == "all":
            params[key] = "all"
            continue
        try:
            n = int(value)
        except ValueError:
            raise InjectError(f"--inject {spec!r}: {key} must be an integer, got {value!r}") from None
        if n < 0:
            raise InjectError(f"--inject {spec!r}: {key} must be >= 0, got {n}")
        params[key] = n
    return Inject(kind, params)


class Injections:
    """The parsed ``--inject`` list, asked per rank and step by the training loop."""

    def __init__(self, specs: list[str] | None = None) -> None:
        self.items = [parse_inject(s) for s in specs or []]
        seen: set[str] = set()
        for it in self.items:
            if it.kind in seen:
                raise InjectError(f"--inject {it.kind} given twice")
            seen.add(it.kind)

    def get(self, kind: str, rank: int) -> Inject | None:
        for it in self.items:
            if it.kind == kind and it.on(rank):
                return it
        return None

    def at_step(self, kind: str, rank: int, step: int) -> Inject | None:
        it = self.get(kind, rank)
        if it is None:
            return None
        start, count = it.params.get("step", 0), it.params.get("count", 1)
        return it if start <= step < start + count else None

    def validate_world(self, world: int) -> None:
        for it in self.items:
            r = it.params.get("rank", "all")
            if r != "all" and r >= world:
                raise InjectError(f"--inject {it.spec()}: rank {r} does not exist with {world} workers")

    def specs(self) -> list[str]:
        return [it.spec() for it in self.items]
