"""The rule catalogue: one TOML document per rule under ``rules/<area>/<ID>.toml``.

Loading is explicit and lazy (nothing registers itself on import). A malformed file raises
:class:`CatalogueError` naming the file and the field; a signature pattern that does not compile raises it when
first used (see :class:`Signature`).

The catalogue drives what runs: a rule says which ``msdoctor preflight`` group runs it
(``preflight_group``) and whether the live supervisor evaluates it on every poll (``every_poll``), so
adding a rule is its TOML, its fixtures and (for a check rule) its function, never a list edit
elsewhere. A rule is retired by turning its file into a tombstone (``status = "retired"``, ``retired``
saying why, optionally ``replaced_by``): the id stays taken forever. When the whole catalogue loads,
every check rule's ``[params]`` is validated against what its function declares
(:func:`msdoctor.engine.model.check_params`).
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
import tomllib
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from msdoctor.cache import JsonCache
from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Hit, Severity, id_key
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
# Three digits, then four from 1000 once an area has issued all of 001–999 (ENV in round 77); never a leading zero past three.
ID_RE = re.compile(r"^(ENV|RT|COMM|PAR|MEM|NUM|DATA|CKPT|PERF)(?:\d{3}|[1-9]\d{3})$")
TEXT_FIELDS = ("title", "detects", "cause", "confirm", "fix", "example")
CHECK_RE = re.compile(r"^[a-z_]+\.[a-z_][a-z0-9_]*$")
# The groups `msdoctor preflight` prints one line for, in order (their titles live with the collectors).
PREFLIGHT_GROUPS = ("host", "packages", "cann", "env", "ranktable", "network", "compare")
STATUSES = ("active", "retired")
TOMBSTONE_FIELDS = {"id", "area", "status", "title", "retired", "replaced_by"}

CheckFn = Callable[[Facts, Mapping[str, Any]], Iterable[Hit]]


# Python's `\b` is Unicode-aware: a CJK character is a word character, so in a pasted title or prose line where Chinese
# runs straight into the message (`…就报NotImplementedError`, `…失联Device Lost`, `启动报错RuntimeError:`) no
# `\bWord` of a rule matches. A rule's `\b` (outside a character class) is compiled as a boundary that also holds
# between a CJK character (kana, CJK ideographs) and an ASCII word character; elsewhere it is `\b` unchanged, so a
# pattern never matches less. The bytes pre-filter already reads CJK bytes as non-word (`_bytes_pattern`).
# The CJK class is case-sensitive in every pattern (`(?-i:…)`): CJK has no case, and under a rule's `(?i)` sre folds
# each of the class's ~27 000 characters when it compiles it — a third of the form's compile time.
_CJK = "(?-i:[\u3040-\u30ff\u3400-\u9fff])"
CJK_BOUNDARY = rf"(?:\b|(?<={_CJK})(?=[A-Za-z0-9_])|(?<=[A-Za-z0-9_])(?={_CJK}))"


def cjk_boundaries(pattern: str) -> str:
    """``pattern`` with each word boundary ``\\b`` outside a character class written as :data:`CJK_BOUNDARY`."""
    if "\\b" not in pattern:
        return pattern
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(CJK_BOUNDARY if pattern[i + 1] == "b" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            i += 1
            for lead in ("^", "]"):  # `[^…`, and a `]` first in the class is a literal
                if i < n and pattern[i] == lead:
                    out.append(lead)
                    i += 1
            continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


class LinePattern:
    """A signature's compiled pattern: Python's own regex on an ASCII line, the :func:`cjk_boundaries` form on a line
    with other characters (the only lines where the two differ). The CJK form is about a quarter slower on lines full
    of candidates, so an ASCII log pays nothing for it (`str.isascii` is a C scan).

    The CJK form is compiled the first time a line with other characters is searched: each of its boundaries holds
    two ~27 000-character classes, ~5 ms a pattern, which was most of what one `msdoctor logs` on an ASCII paste cost
    (1.1 s of ~2 s for the signatures with no literal anchor, compiled for every line).
    """

    __slots__ = ("plain", "_wide", "pattern", "groupindex", "flags")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.plain = re.compile(pattern, flags)
        self._wide: re.Pattern[str] | None = None
        self.pattern = pattern
        self.flags = flags
        self.groupindex = self.plain.groupindex

    @property
    def wide(self) -> re.Pattern[str]:
        if self._wide is None:
            wide = cjk_boundaries(self.pattern)
            self._wide = self.plain if wide == self.pattern else re.compile(wide, self.flags)
        return self._wide

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return (self.plain if text.isascii() else self.wide).search(text, pos)

    def finditer(self, text: str, pos: int = 0) -> Iterator[re.Match[str]]:
        return (self.plain if text.isascii() else self.wide).finditer(text, pos)


@dataclass(frozen=True)
class Signature:
    """A regex over one log line / exception text, with the named groups it extracts.

    The regex is compiled on first use, not at load: compiling all ~1270 patterns was about half of loading the
    catalogue, and a paste runs the regexes of the few signatures whose literal anchor it contains. The tests
    compile every shipped pattern; ``source`` names the rule file and field in the error that a pattern which
    does not compile raises (the CLI prints it as one line, exit 2).
    """

    pattern: str
    where: tuple[str, ...] = ()
    source: str = field(default="", compare=False)

    @cached_property
    def regex(self) -> LinePattern:
        try:
            return LinePattern(self.pattern)
        except re.error as exc:
            raise CatalogueError(f"{self.source}: signature pattern {self.pattern[:80]!r} does not compile ({exc})") from None

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
    preflight_group: str | None = None
    every_poll: bool = False
    other_causes: str | None = None
    twin_of: str | None = None  # a twin: reports the lines of this signature rule where no parallel layout is named
    signatures_of: str | None = None  # a code-family rule that reads the same lines as this rule (its signatures copied)
    benign: bool = False  # an info rule's line is no fault even where it is logged as an error (not an unrecognised error)

    @property
    def kind(self) -> str:
        return "twin" if self.twin_of else "signature" if self.signatures or self.signatures_of else "check"

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
        if self.preflight_group:
            d["preflight_group"] = self.preflight_group
        if self.every_poll:
            d["every_poll"] = True
        if self.other_causes:
            d["other_causes"] = self.other_causes
        if self.twin_of:
            d["twin_of"] = self.twin_of
        if self.signatures_of:
            d["signatures_of"] = self.signatures_of
        if self.benign:
            d["benign"] = True
        return d


@dataclass(frozen=True)
class Tombstone:
    """A retired rule: its id is never reused; ``explain`` can still say what it was and why it went."""

    id: str
    area: str
    title: str
    retired: str
    path: str
    replaced_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": "retired", "title": self.title, "retired": self.retired,
                "replaced_by": self.replaced_by}  # fmt: skip


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
    """One active rule; a tombstone here is an error (use :func:`parse_document`)."""
    entry = parse_document(text, path, area_dir)
    if isinstance(entry, Tombstone):
        raise CatalogueError(f"{path}: rule {entry.id} is retired ({entry.retired})")
    return entry


CONFLICT_RE = re.compile(r"^(?:<{7}|>{7}) ", re.M)  # not `=======`: a log's separator line may be one


def parse_document(text: str, path: str, area_dir: str | None = None, docs: JsonCache | None = None) -> Rule | Tombstone:
    """One rule file's text as a Rule (or a retired rule's Tombstone); ``docs`` holds the TOML of texts an earlier
    run parsed, by digest (msdoctor/cache.py: parsing ~1500 files was a quarter of a short paste's run)."""
    m = CONFLICT_RE.search(text)
    if m is not None:  # inside a multi-line string a merge's markers are still valid TOML: refuse them here
        line = text.count("\n", 0, m.start()) + 1
        raise CatalogueError(f"{path}:{line}: an unresolved merge conflict marker ({m.group(0).strip()})")
    key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest() if docs is not None else ""
    doc = docs.get(key) if docs is not None else None
    if not isinstance(doc, dict):
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise CatalogueError(f"{path}: not valid TOML ({exc})") from None
        if docs is not None:
            docs.put(key, doc)
    rid = _field(doc, "id", path)
    if not ID_RE.match(rid):
        raise CatalogueError(f"{path}: field 'id' {rid!r} is not AREA + 3 digits, or 4 from 1000 (e.g. COMM001, ENV1000)")
    area = _field(doc, "area", path)
    if area not in AREAS or not rid.startswith(area):
        raise CatalogueError(f"{path}: field 'area' {area!r} must be one of {sorted(AREAS)} and prefix the id")
    if area_dir is not None and area_dir.upper() != area:
        raise CatalogueError(f"{path}: field 'area' {area!r} does not match its folder {area_dir!r}")
    status = doc.get("status", "active")
    if status not in STATUSES:
        raise CatalogueError(f"{path}: field 'status' must be one of {STATUSES}, got {status!r}")
    if status == "retired":
        extra = sorted(set(doc) - TOMBSTONE_FIELDS)
        if extra:
            raise CatalogueError(f"{path}: unknown field '{extra[0]}' (a retired rule keeps only {sorted(TOMBSTONE_FIELDS)})")
        replaced = doc.get("replaced_by")
        if replaced is not None and (not isinstance(replaced, str) or not ID_RE.match(replaced)):
            raise CatalogueError(f"{path}: field 'replaced_by' must be a rule id")
        return Tombstone(id=rid, area=area, title=_field(doc, "title", path), retired=_field(doc, "retired", path),
                         path=path, replaced_by=replaced)  # fmt: skip
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
        unknown = sorted(set(s) - {"pattern", "where"})
        if unknown:
            raise CatalogueError(f"{path}: unknown field '{where}.{unknown[0]}'")
        w = s.get("where", [])
        if isinstance(w, str):
            w = [w]
        sigs.append(Signature(pattern=s["pattern"], where=tuple(w), source=f"{path}: field '{where}.pattern'"))
    check = doc.get("check")
    if check is not None and (not isinstance(check, str) or not CHECK_RE.match(check)):
        raise CatalogueError(f"{path}: field 'check' must name 'module.function' in msdoctor/checks")
    sig_of = doc.get("signatures_of")
    if sig_of is not None:
        if not isinstance(sig_of, str) or not ID_RE.match(sig_of) or sig_of == rid:
            raise CatalogueError(f"{path}: field 'signatures_of' must be another rule's id")
        if sigs or check or doc.get("twin_of") is not None:
            raise CatalogueError(f"{path}: a rule that reads the lines of another (field 'signatures_of') has no "
                                 f"'signatures', 'check' or 'twin_of' of its own")  # fmt: skip
    twin = doc.get("twin_of")
    if twin is not None:
        if not isinstance(twin, str) or not ID_RE.match(twin):
            raise CatalogueError(f"{path}: field 'twin_of' must be a rule id")
        if sigs or check:
            raise CatalogueError(f"{path}: a twin (field 'twin_of') has neither 'signatures' nor 'check': it reports "
                                 f"the lines of {twin}")  # fmt: skip
    elif bool(sigs or sig_of) == bool(check):
        raise CatalogueError(f"{path}: a rule has either 'signatures' or 'check' (exactly one)")
    source = doc.get("source", "log" if sigs or twin or sig_of else None)
    if twin is not None and source != "log":
        raise CatalogueError(f"{path}: a twin (field 'twin_of') is a log rule (source 'log')")
    if source not in SOURCES:
        raise CatalogueError(f"{path}: field 'source' must be one of {SOURCES}, got {source!r}")
    params = doc.get("params", {})
    if not isinstance(params, dict):
        raise CatalogueError(f"{path}: field 'params' must be a table")
    if params and not check:
        raise CatalogueError(f"{path}: field 'params' is only for a check rule")
    group = doc.get("preflight_group")
    if group is not None:
        if group not in PREFLIGHT_GROUPS:
            raise CatalogueError(f"{path}: field 'preflight_group' must be one of {PREFLIGHT_GROUPS}, got {group!r}")
        if not check or source not in ("env", "ranktable"):
            raise CatalogueError(f"{path}: field 'preflight_group' is for check rules of source env or ranktable")
    every_poll = doc.get("every_poll", False)
    if not isinstance(every_poll, bool):
        raise CatalogueError(f"{path}: field 'every_poll' must be true or false")
    if every_poll and (not check or source != "run"):
        raise CatalogueError(f"{path}: field 'every_poll' is for check rules of source run")
    other = doc.get("other_causes")
    if other is not None and (not isinstance(other, str) or len(other.strip()) < 40):
        raise CatalogueError(f"{path}: field 'other_causes' must be a text of at least 40 characters")
    benign = doc.get("benign", False)
    if not isinstance(benign, bool):
        raise CatalogueError(f"{path}: field 'benign' must be true or false")
    if benign and (severity.value != "info" or not sigs):
        raise CatalogueError(f"{path}: field 'benign' is for signature rules of severity info (a line that is no fault)")
    known = set(TEXT_FIELDS) | {
        "id", "area", "severity", "references", "role", "signatures", "check", "source", "params",
        "seed", "seed_correction", "status", "preflight_group", "every_poll", "other_causes", "twin_of", "benign", "signatures_of",
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
        preflight_group=group,
        every_poll=every_poll,
        other_causes=other.strip() if other else None,
        twin_of=twin,
        signatures_of=sig_of,
        benign=benign,
        **texts,
    )


def resolve_check(name: str) -> CheckFn:
    """``env.cann_matches`` → ``msdoctor.checks.env.cann_matches`` (imported on demand: the engine
    names its plugins, it does not import them statically)."""
    module_name, _, func = name.partition(".")
    try:
        module = importlib.import_module(f"msdoctor.checks.{module_name}")
    except ImportError as exc:
        raise CatalogueError(f"check {name!r}: module msdoctor.checks.{module_name} not importable ({exc})") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise CatalogueError(f"check {name!r}: no function {func} in msdoctor.checks.{module_name}")
    return fn  # type: ignore[no-any-return]


def _type_name(t: Any) -> str:
    if isinstance(t, types.UnionType):
        return " or ".join(_type_name(a) for a in t.__args__ if a is not type(None))
    return {float: "number", int: "integer", str: "string", bool: "true/false", list: "array", dict: "table"}.get(
        t, getattr(t, "__name__", str(t))
    )


def _accepts(t: Any, value: Any) -> bool:
    options = t.__args__ if isinstance(t, types.UnionType) else (t,)
    for o in options:
        if o is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if o is int and isinstance(value, bool):
            continue
        if o is not type(None) and isinstance(value, o):
            return True
    return False


def validate_params(rule: Rule, fn: CheckFn | None = None) -> None:
    """The rule's ``[params]`` against what its check declares: an unknown name, a required name
    missing, or a value of another type is a :class:`CatalogueError` naming the file and the field."""
    if rule.check is None:
        return
    fn = fn or resolve_check(rule.check)
    declared: Mapping[str, Any] | None = getattr(fn, "params", None)
    if declared is None:
        raise CatalogueError(f"{rule.path}: check {rule.check} declares no parameters (decorate it with @check_params)")
    for name, value in rule.params.items():
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise CatalogueError(f"{rule.path}: unknown field 'params.{name}' (check {rule.check} takes: {known})")
        if not _accepts(declared[name], value):
            raise CatalogueError(
                f"{rule.path}: field 'params.{name}' must be {_type_name(declared[name])}, got {value!r}"
            )
    for name, t in declared.items():
        optional = isinstance(t, types.UnionType) and type(None) in t.__args__
        if not optional and name not in rule.params:
            raise CatalogueError(f"{rule.path}: missing field 'params.{name}' (check {rule.check} needs it)")


class Catalogue:
    def __init__(self, rules: Iterable[Rule], tombstones: Iterable[Tombstone] = ()) -> None:
        self._rules: dict[str, Rule] = {}
        self._tombstones: dict[str, Tombstone] = {}
        self._twins: tuple[dict[str, Rule], dict[str, str]] | None = None  # (the rules it was read from, twins)
        entries: list[Rule | Tombstone] = [*rules, *tombstones]
        for r in entries:
            taken: Rule | Tombstone | None = self._rules.get(r.id) or self._tombstones.get(r.id)
            if taken is not None:
                if isinstance(r, Tombstone) or isinstance(taken, Tombstone):
                    tomb, other = (r, taken) if isinstance(r, Tombstone) else (taken, r)
                    raise CatalogueError(f"{other.path}: id {r.id} is retired ({tomb.path}): a retired id is never reused")
                raise CatalogueError(f"{r.path}: id {r.id} already used by {taken.path}")
            if isinstance(r, Tombstone):
                self._tombstones[r.id] = r
            else:
                self._rules[r.id] = r
        for t in self._tombstones.values():
            if t.replaced_by is not None and t.replaced_by not in self._rules:
                raise CatalogueError(f"{t.path}: field 'replaced_by' {t.replaced_by!r} is not an active rule")

    def check_twins(self) -> None:
        """Each twin names an active signature rule of its own role and severity, one twin per rule (run on the
        whole catalogue by :func:`load_from`; a subset — the wording model's, a test's — may lack a twin's rule)."""
        twins: dict[str, str] = {}
        for r in self._rules.values():
            if r.twin_of is None:
                continue
            of = self._rules.get(r.twin_of)
            if of is None or of.kind != "signature":
                raise CatalogueError(f"{r.path}: field 'twin_of' {r.twin_of!r} is not an active signature rule")
            if (of.role, of.severity) != (r.role, r.severity):
                raise CatalogueError(f"{r.path}: a twin has the role and severity of {of.id} ({of.role}, {of.severity.value})")
            if of.id in twins:
                raise CatalogueError(f"{r.path}: {of.id} already has the twin {twins[of.id]}")
            twins[of.id] = r.id

    def twins(self) -> dict[str, str]:
        """Signature rule → its twin: the rule that reports its lines in an input naming no parallel layout
        (a shape or dtype refusal of one operator is a model/config error there, not a sharding one). Read from
        the current rule table: a catalogue without the twin (bench/leaveout.py switches rules off) reports the
        lines as the signature rule's. Kept while the rule table is the same object (bench/leaveout.py and tests
        replace it, never edit it in place): the live tail asks at every hit. Read-only for callers."""
        if self._twins is None or self._twins[0] is not self._rules:
            rules = self._rules
            self._twins = (rules, {r.twin_of: r.id for r in rules.values() if r.twin_of is not None and r.twin_of in rules})
        return self._twins[1]

    def as_reported(self, rule: Rule, layout: bool) -> Rule:
        """``rule``, or its twin where the input names no parallel layout (``layout`` false): the one choice the
        live tail and the supervisor's exception classification make per line (``msdoctor logs`` renames a whole
        scan's events with :meth:`twins`)."""
        twin = None if layout else self.twins().get(rule.id)
        return (self.get(twin) or rule) if twin else rule

    @property
    def tombstones(self) -> list[Tombstone]:
        return sorted(self._tombstones.values(), key=lambda t: id_key(t.id))

    def retired(self, rid: str) -> Tombstone | None:
        return self._tombstones.get(rid.upper())

    def __iter__(self) -> Iterator[Rule]:
        return iter(sorted(self._rules.values(), key=lambda r: id_key(r.id)))

    def __len__(self) -> int:
        return len(self._rules)

    def __contains__(self, rid: object) -> bool:
        return rid in self._rules

    def get(self, rid: str) -> Rule | None:
        return self._rules.get(rid.upper())

    def select(
        self,
        *,
        area: str | None = None,
        source: str | Iterable[str] | None = None,
        kind: str | None = None,
        preflight_group: str | None = None,
        every_poll: bool | None = None,
    ) -> list[Rule]:
        sources = {source} if isinstance(source, str) else set(source) if source else None
        return [
            r
            for r in self
            if (area is None or r.area == area.upper())
            and (sources is None or r.source in sources)
            and (kind is None or r.kind == kind)
            and (preflight_group is None or r.preflight_group == preflight_group)
            and (every_poll is None or r.every_poll == every_poll)
        ]


def rules_root() -> Path:
    """Where the rule files are: ``rules/`` beside this package when it runs from a source tree, else the
    installed ``msdoctor_rules`` package. The source tree comes first so that code and rules always come from the
    same checkout: a second checkout (a git worktree) run with ``PYTHONPATH`` pointing at it would otherwise get
    its own engine with the rules of whichever checkout the venv's editable install maps ``msdoctor_rules`` to."""
    tree = Path(__file__).resolve().parents[2]
    if (tree / "pyproject.toml").is_file() and (tree / "rules" / "__init__.py").is_file():
        return tree / "rules"
    return Path(str(resources.files("msdoctor_rules")))


def load_from(root: Path, *, check_params: bool = True) -> Catalogue:
    """Every rule file under ``root``; with ``check_params`` each check rule's parameters are validated
    against its function's declaration (importing the check modules, none of which imports MindSpore)."""
    if not root.is_dir():
        raise CatalogueError(f"{root}: rule catalogue folder not found")
    rules: list[Rule] = []
    tombstones: list[Tombstone] = []
    docs = JsonCache("rule-toml", f"py{sys.version_info[0]}.{sys.version_info[1]}")
    for path in sorted(root.glob("*/*.toml")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CatalogueError(f"{path}: cannot be read ({exc})") from None
        entry = parse_document(text, str(path), area_dir=path.parent.name, docs=docs)
        if entry.id != path.stem:
            raise CatalogueError(f"{path}: field 'id' {entry.id!r} does not match the file name")
        if isinstance(entry, Tombstone):
            tombstones.append(entry)
        else:
            if check_params:
                validate_params(entry)
            rules.append(entry)
    catalogue = Catalogue(_shared_signatures(rules), tombstones)
    catalogue.check_twins()
    docs.save()
    return catalogue


def _shared_signatures(rules: list[Rule]) -> list[Rule]:
    """Each rule with ``signatures_of`` given the signatures of the rule it names: the code-family rules that read
    one wrapper's line and split it by the code in it (CUDA's ENV423 / RT080 / MEM718, CANN's ENV050 / COMM080 /
    PERF010) keep one list, in one file."""
    by_id = {r.id: r for r in rules}
    out = []
    for r in rules:
        if r.signatures_of is not None:
            src = by_id.get(r.signatures_of)
            if src is None or not src.signatures or src.signatures_of is not None:
                raise CatalogueError(f"{r.path}: field 'signatures_of' {r.signatures_of!r} is not an active rule with "
                                     f"signatures of its own")  # fmt: skip
            r = replace(r, signatures=src.signatures)
        out.append(r)
    return out


@cache
def load_catalogue() -> Catalogue:
    return load_from(rules_root())
