"""The root cause of a multi-rank failure: one type, one JSON shape, for every command that names one.

``msdoctor logs`` (correlation of the ranks' logs) and ``msdoctor report`` / ``watch`` (a run's events)
both answer "which rank, which rule, why, and what followed from it". They build a :class:`RootCause`
and serialise it with :meth:`RootCause.to_dict`; a view renders that dict and nothing else.

JSON shape (every key always present)::

    {"rank": int | null,          # the culprit rank (null: no single rank, or not determined)
     "rule": str | null,          # the finding that names it (null: nothing fired)
     "step": int | null,          # the step at which it went wrong, when known
     "message": str,              # what happened (or why no root cause could be determined)
     "evidence": [{"text", "file"?, "line"?, "fact"?}, ...],
     "consequences": [{"rank": int | null, "rule": str | null, "message": str}, ...],
     "chain": [str, ...],         # the reasoning, one step a line, culprit first
     "caveat": str | null,        # what limits the verdict (e.g. coverage, clocks)
     "determined": bool}          # false: ``message`` says why no root cause was named
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from msdoctor.engine.model import Evidence, Finding


@dataclass(frozen=True)
class Consequence:
    """Something that followed from the root cause (a peer's time-out, a launcher's kill)."""

    rank: int | None
    rule: str | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "rule": self.rule, "message": self.message}


@dataclass(frozen=True)
class RootCause:
    rank: int | None
    rule: str | None
    message: str
    step: int | None = None
    evidence: tuple[Evidence, ...] = ()
    consequences: tuple[Consequence, ...] = ()
    chain: tuple[str, ...] = ()
    caveat: str | None = None
    determined: bool = True

    @classmethod
    def undetermined(cls, reason: str, rule: str | None = None, caveat: str | None = None) -> RootCause:
        """No root cause could be named; ``reason`` says why (rendered as such, never as a culprit)."""
        return cls(rank=None, rule=rule, message=reason, caveat=caveat, determined=False)

    @classmethod
    def from_finding(
        cls,
        f: Finding,
        consequences: Iterable[Consequence] = (),
        chain: Iterable[str] = (),
        caveat: str | None = None,
    ) -> RootCause:
        return cls(rank=f.rank, rule=f.rule, message=f.message, step=f.step, evidence=tuple(f.evidence),
                   consequences=tuple(consequences), chain=tuple(chain), caveat=caveat)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "rule": self.rule,
            "step": self.step,
            "message": self.message,
            "evidence": [e.to_dict() for e in self.evidence],
            "consequences": [c.to_dict() for c in self.consequences],
            "chain": list(self.chain),
            "caveat": self.caveat,
            "determined": self.determined,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RootCause:
        """Inverse of :meth:`to_dict` (a report.json read back); malformed parts are dropped."""
        ev = [e for e in d.get("evidence") or [] if isinstance(e, dict)]
        cons = [c for c in d.get("consequences") or [] if isinstance(c, dict)]
        rank, step = d.get("rank"), d.get("step")
        return cls(
            rank=rank if isinstance(rank, int) else None,
            rule=d.get("rule") if isinstance(d.get("rule"), str) else None,
            message=str(d.get("message", "")),
            step=step if isinstance(step, int) else None,
            evidence=tuple(Evidence(text=str(e.get("text", "")), file=e.get("file"), line=e.get("line"),
                                    fact=e.get("fact")) for e in ev),  # fmt: skip
            consequences=tuple(Consequence(rank=c.get("rank") if isinstance(c.get("rank"), int) else None,
                                           rule=c.get("rule") if isinstance(c.get("rule"), str) else None,
                                           message=str(c.get("message", ""))) for c in cons),  # fmt: skip
            chain=tuple(str(s) for s in d.get("chain") or []),
            caveat=d.get("caveat") if isinstance(d.get("caveat"), str) else None,
            determined=bool(d.get("determined", True)),
        )


__all__ = ["Consequence", "RootCause"]

