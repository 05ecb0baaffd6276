"""The data that flows between collectors, rules and views."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def check_params(**declared: Any) -> Callable[[F], F]:
    """Declare the ``[params]`` a check function reads and their types (``float``, ``int``, ``str``,
    ``list``, ``dict``; ``T | None`` when the check has a default). The catalogue validates every rule
    against this when it loads. Nothing is registered: the function only carries the declaration."""

    def mark(fn: F) -> F:
        fn.params = dict(declared)  # type: ignore[attr-defined]
        return fn

    return mark


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank_order(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Unknown:
    """A fact that could not be known, and why (never reported as a pass)."""

    reason: str
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"unknown": self.reason, "source": self.source}


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence: a log line (file, line, text) or a fact value."""

    text: str
    file: str | None = None
    line: int | None = None
    fact: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"text": self.text}
        if self.file is not None:
            d["file"] = self.file
        if self.line is not None:
            d["line"] = self.line
        if self.fact is not None:
            d["fact"] = self.fact
        return d

    def __str__(self) -> str:
        if self.file is not None:
            loc = f"{self.file}:{self.line}" if self.line is not None else self.file
            return f"{loc}: {self.text}"
        if self.fact is not None:
            return f"{self.fact} = {self.text}"
        return self.text


@dataclass(frozen=True)
class Hit:
    """What a check yields when its rule fires: the specific message and its evidence."""

    message: str
    evidence: tuple[Evidence, ...] = ()
    rank: int | None = None
    step: int | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Finding:
    """A rule that fired: what is wrong, where (rank/step), the evidence, the cause and the fix."""

    rule: str
    severity: Severity
    title: str
    message: str
    cause: str
    fix: str
    rank: int | None = None
    step: int | None = None
    evidence: list[Evidence] = field(default_factory=list)
    count: int = 1
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "title": self.title,
            "message": self.message,
            "rank": self.rank,
            "step": self.step,
            "count": self.count,
            "evidence": [e.to_dict() for e in self.evidence],
            "cause": self.cause,
            "fix": self.fix,
            "data": self.data,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            rule=d["rule"],
            severity=Severity(d["severity"]),
            title=d.get("title", ""),
            message=d.get("message", ""),
            cause=d.get("cause", ""),
            fix=d.get("fix", ""),
            rank=d.get("rank"),
            step=d.get("step"),
            evidence=[
                Evidence(
                    text=e.get("text", ""), file=e.get("file"), line=e.get("line"), fact=e.get("fact")
                )
                if isinstance(e, dict)
                else Evidence(text=str(e))
                for e in d.get("evidence", [])
            ],
            count=d.get("count", 1),
            data=d.get("data", {}),
        )


@dataclass(frozen=True)
class NotEvaluated:
    """A rule whose facts are missing: reported as such, never as passed."""

    rule: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "reason": self.reason}


def id_key(rid: str) -> tuple[str, int]:
    """A rule id's order: by area, then by number, so that ENV1000 follows ENV999 (string order puts it after ENV100)."""
    digits = len(rid) - len(rid.rstrip("0123456789"))
    return (rid[: len(rid) - digits], int(rid[len(rid) - digits :] or -1))


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(
        findings,
        key=lambda f: (f.severity.rank_order, id_key(f.rule), -1 if f.rank is None else f.rank, f.step or 0),
    )
