"""The rule catalogue: one TOML document per rule under ``rules/<area>/<ID>.toml``.

Loading is explicit and lazy (nothing registers itself on import). A malformed file raises
:class:`CatalogueError` naming the file and the field.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from msdoctor.engine.model import Severity
from msdoctor.errors import CatalogueError

AREAS: dict[str, str] = {
    "ENV": "environment, install and version drift",
    "RT": "rank table",
    "COMM": "collective communication (HCCL, msrun cluster)",
    "PAR": "parallel strategy, shapes and replicas",
    "MEM": "device and host memory",
    "NUM": "numerics: NaN, overflow, loss scale",
    "DATA": "data pipeline",
    "CKPT": "checkpoints",
    "PERF": "performance",
}
SOURCES = ("log", "env", "ranktable", "run", "profile", "checkpoint", "config")
ROLES = ("root", "consequence", "progress", "info")
ID_RE = re.compile(r"^(ENV|RT|COMM|PAR|MEM|NUM|DATA|CKPT|PERF)\d{3}$")
TEXT_FIELDS = ("title", "detects", "cause", "confirm", "fix", "example")
CHECK_RE = re.compile(r"^[a-z_]+\.[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class Signature:
    """A regex over one log line / exception text, with the named groups it extracts."""

    pattern: str
    regex: re.Pattern[str]
    where: tuple[str, ...] = ()

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(self.regex.groupindex)


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: Severity
    area: str
    source: str
    detects: str
    cause: str
    confirm: str
    fix: str
    example: str
    references: tuple[str, ...]
    path: str
    signatures: tuple[Signature, ...] = ()
    check: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    role: str = "root"
    seed: str | None = None
    seed_correction: str | None = None

    @property
    def kind(self) -> str:
        return "signature" if self.signatures else "check"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "severity": self.severity.value,
            "area": self.area,
            "source": self.source,
            "kind": self.kind,
            "role": self.role,
            "detects": self.detects,
            "cause": self.cause,
            "confirm": self.confirm,
            "fix": self.fix,
            "example": self.example,
            "references": list(self.references),
        }
        if self.signatures:
            d["signatures"] = [{"pattern": s.pattern, "groups": list(s.groups)} for s in self.signatures]
        if self.check:
            d["check"] = self.check
            d["params"] = self.params
        if self.seed:
            d["seed"] = self.seed
        if self.seed_correction:
            d["seed_correction"] = self.seed_correction
        return d


def _field(doc: dict[str, Any], name: str, path: str, kind: type | tuple[type, ...] = str) -> Any:
    if name not in doc:
        raise CatalogueError(f"{path}: missing field '{name}'")
    value = doc[name]
    if not isinstance(value, kind):
        raise CatalogueError(f"{path}: field '{name}' must be {getattr(kind, '__name__', kind)}")
    if isinstance(value, str) and not value.strip():
        raise CatalogueError(f"{path}: field '{name}' is empty")
    return value


def parse_rule(text: str, path: str, area_dir: str | None = None) -> Rule:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{path}: not valid TOML ({exc})") from None
    rid = _field(doc, "id", path)
    if not ID_RE.match(rid):
        raise CatalogueError(f"{path}: field 'id' {rid!r} is not AREA+3 digits (e.g. COMM001)")
    area = _field(doc, "area", path)
    if area not in AREAS or not rid.startswith(area):
        raise CatalogueError(f"{path}: field 'area' {area!r} must be one of {sorted(AREAS)} and prefix the id")
    if area_dir is not None and area_dir.upper() != area:
        raise CatalogueError(f"{path}: field 'area' {area!r} does not match its folder {area_dir!r}")
    sev = _field(doc, "severity", path)
    try:
        severity = Severity(sev)
    except ValueError:
        raise CatalogueError(f"{path}: field 'severity' must be error|warning|info, got {sev!r}") from None
    texts = {name: _field(doc, name, path) for name in TEXT_FIELDS}
    refs = _field(doc, "references", path, list)
    if not refs or not all(isinstance(r, str) and r.strip() for r in refs):
        raise CatalogueError(f"{path}: field 'references' must be a non-empty list of strings")
    role = doc.get("role", "root")
    if role not in ROLES:
        raise CatalogueError(f"{path}: field 'role' must be one of {ROLES}, got {role!r}")

    sigs: list[Signature] = []
    raw_sigs = doc.get("signatures", [])
    if not isinstance(raw_sigs, list):
        raise CatalogueError(f"{path}: field 'signatures' must be an array of tables")
    for i, s in enumerate(raw_sigs):
        where = f"signatures[{i}]"
        if not isinstance(s, dict) or not isinstance(s.get("pattern"), str) or not s["pattern"]:
            raise CatalogueError(f"{path}: field '{where}.pattern' missing or not a string")
        try:
            rx = re.compile(s["pattern"])
        except re.error as exc:
            raise CatalogueError(f"{path}: field '{where}.pattern' does not compile ({exc})") from None
        unknown = sorted(set(s) - {"pattern", "where"})
        if unknown:
            raise CatalogueError(f"{path}: unknown field '{where}.{unknown[0]}'")
        w = s.get("where", [])
        if isinstance(w, str):
            w = [w]
        sigs.append(Signature(pattern=s["pattern"], regex=rx, where=tuple(w)))
    check = doc.get("check")
    if check is not None and (not isinstance(check, str) or not CHECK_RE.match(check)):
        raise CatalogueError(f"{path}: field 'check' must name 'module.function' in msdoctor/checks")
    if bool(sigs) == bool(check):
        raise CatalogueError(f"{path}: a rule has either 'signatures' or 'check' (exactly one)")
    source = doc.get("source", "log" if sigs else None)
    if source not in SOURCES:
        raise CatalogueError(f"{path}: field 'source' must be one of {SOURCES}, got {source!r}")
    params = doc.get("params", {})
    if not isinstance(params, dict):
        raise CatalogueError(f"{path}: field 'params' must be a table")
    known = set(TEXT_FIELDS) | {
        "id", "area", "severity", "references", "role", "signatures", "check", "source", "params",
        "seed", "seed_correction",
    }  # fmt: skip
    extra = sorted(set(doc) - known)
    if extra:
        raise CatalogueError(f"{path}: unknown field '{extra[0]}'")
    return Rule(
        id=rid,
        severity=severity,
        area=area,
        source=source,
        references=tuple(refs),
        path=path,
        signatures=tuple(sigs),
        check=check,
        params=params,
        role=role,
        seed=doc.get("seed"),
        seed_correction=doc.get("seed_correction"),
        **texts,
    )


class Catalogue:
    def __init__(self, rules: Iterable[Rule]) -> None:
        self._rules: dict[str, Rule] = {}
        for r in rules:
            if r.id in self._rules:
                raise CatalogueError(f"{r.path}: id {r.id} already used by {self._rules[r.id].path}")
            self._rules[r.id] = r

    def __iter__(self) -> Iterator[Rule]:
        return iter(sorted(self._rules.values(), key=lambda r: r.id))

    def __len__(self) -> int:
        return len(self._rules)

    def __contains__(self, rid: object) -> bool:
        return rid in self._rules

    def get(self, rid: str) -> Rule | None:
        return self._rules.get(rid.upper())

    def select(
        self, *, area: str | None = None, source: str | Iterable[str] | None = None, kind: str | None = None
    ) -> list[Rule]:
        sources = {source} if isinstance(source, str) else set(source) if source else None
        return [
            r
            for r in self
            if (area is None or r.area == area.upper())
            and (sources is None or r.source in sources)
            and (kind is None or r.kind == kind)
        ]


def rules_root() -> Path:
    """Where the rule files are: the ``msdoctor_rules`` package (source tree or installed)."""
    return Path(str(resources.files("msdoctor_rules")))


def load_from(root: Path) -> Catalogue:
    if not root.is_dir():
        raise CatalogueError(f"{root}: rule catalogue folder not found")
    rules = []
    for path in sorted(root.glob("*/*.toml")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CatalogueError(f"{path}: cannot be read ({exc})") from None
        rule = parse_rule(text, str(path), area_dir=path.parent.name)
        if rule.id != path.stem:
            raise CatalogueError(f"{path}: field 'id' {rule.id!r} does not match the file name")
        rules.append(rule)
    return Catalogue(rules)


@cache
def load_catalogue() -> Catalogue:
    return load_from(rules_root())
