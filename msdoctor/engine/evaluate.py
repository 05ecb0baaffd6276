"""Evaluation: check rules over a facts snapshot, signature rules over text lines."""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from msdoctor.cache import JsonCache
from msdoctor.engine.catalogue import Catalogue, CheckFn, Rule, Signature, resolve_check
from msdoctor.engine.facts import Facts, Missing
from msdoctor.engine.model import Finding, Hit, NotEvaluated, sort_findings

try:  # Python ≥ 3.11 keeps the regex parser private; the old public names warn.
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

__all__ = ["CheckFn", "Evaluation", "SignatureSet", "resolve_check", "run_checks", "signature_set"]
_DIGITS = re.compile(r"\d+")
_CODE_RE = re.compile(r"\bE[0-9A-Z]\d{4}\b|\b[1-5]\d{5}\b")
# the named groups by which a code-family rule hands its code to msdoctor/engine/codes.py lookup(), in the order read
# (a CANN code, an ACL return code, the runtime's internal rtError_t; the text after a CUDA wrapper's words,
# msdoctor/data/cuda_errors.toml)
CODE_GROUPS = ("cann_code", "acl_code", "rt_code", "cuda_error")


@dataclass
class Evaluation:
    findings: list[Finding] = field(default_factory=list)
    not_evaluated: list[NotEvaluated] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)

    def extend(self, other: Evaluation) -> None:
        self.findings.extend(other.findings)
        self.not_evaluated.extend(other.not_evaluated)
        self.passed.extend(other.passed)


def finding_from_hit(rule: Rule, hit: Hit) -> Finding:
    return Finding(
        rule=rule.id,
        severity=rule.severity,
        title=rule.title,
        message=hit.message,
        cause=rule.cause.strip(),
        fix=rule.fix.strip(),
        rank=hit.rank,
        step=hit.step,
        evidence=list(hit.evidence),
        data=dict(hit.data),
    )


def run_checks(rules: Iterable[Rule], facts: Facts, params: Mapping[str, Mapping[str, Any]] | None = None) -> Evaluation:
    """Evaluate check rules; a rule whose facts are missing is *not evaluated*, never passed.

    ``params`` overrides a rule's thresholds by rule id (e.g. from a command-line option). A check that
    raises anything but ``Missing`` (a bug, or facts of an unexpected shape) is *not evaluated* too,
    with the error named: one broken check never takes the command down nor hides the other rules.
    """
    ev = Evaluation()
    for rule in rules:
        if rule.check is None:
            continue
        fn = resolve_check(rule.check)
        p = dict(rule.params)
        if params and rule.id in params:
            p.update(params[rule.id])
        try:
            hits = list(fn(facts, p))
        except Missing as miss:
            ev.not_evaluated.append(NotEvaluated(rule.id, f"{miss.name}: {miss.reason}"))
            continue
        except Exception as exc:  # noqa: BLE001 — reported, never a traceback (issue 10)
            import traceback

            tb = traceback.extract_tb(exc.__traceback__)[-1:]  # the innermost frame points at the bug
            where = f" (at {tb[0].filename.rsplit('/', 1)[-1]}:{tb[0].lineno})" if tb else ""
            reason = f"check {rule.check} failed: {type(exc).__name__}: {exc}{where}"
            ev.not_evaluated.append(NotEvaluated(rule.id, reason))
            continue
        if hits:
            ev.findings.extend(finding_from_hit(rule, h) for h in hits)
        else:
            ev.passed.append(rule.id)
    ev.findings = sort_findings(ev.findings)
    return ev


# -- signatures -------------------------------------------------------------------------------


def _long_enough(anchor: str) -> bool:
    """Four bytes of UTF-8 at least: four ASCII characters, two CJK ones (a line is matched as bytes first)."""
    return len(anchor.encode("utf-8")) >= 4


def _caseless(ch: str) -> bool:
    return ch.lower() == ch == ch.upper()


def _longest_run(items: Any, caseless: bool = False) -> str:
    """The longest run of literals that every match of the parsed ``items`` holds in one piece; under a pattern's
    global ``(?i)`` (``caseless``) only characters without case (CJK, digits, punctuation) are literal."""
    best = ""
    run: list[str] = []

    def flush() -> None:
        nonlocal best, run
        s = "".join(run)
        if len(s) > len(best):
            best = s
        run = []

    def walk(items: Any) -> None:
        for op, arg in items:
            if op is sre_constants.LITERAL and (not caseless or _caseless(chr(arg))):
                run.append(chr(arg))
            elif _mandatory_group(op, arg):
                # a group that is neither repeated, optional nor an alternative (those are other ops) must match,
                # so its literals are the pattern's too: `(?P<what>\w*Profil(?:er|ing)\w*) only supports` → `Profil`
                walk(arg[-1])
            else:
                flush()

    walk(items)
    flush()
    return best


def _mandatory_group(op: Any, arg: Any) -> bool:
    return op is sre_constants.SUBPATTERN and bool(arg[-1]) and not arg[1] & sre_constants.SRE_FLAG_IGNORECASE


@lru_cache(maxsize=8192)
def literal_anchor(pattern: str) -> str | None:
    """The longest literal run that every match of ``pattern`` must contain (for a cheap pre-filter).

    Returns None when the pattern has no mandatory literal of at least 4 bytes (`_long_enough`); under a global
    ``(?i)`` only characters without case count (`利用率`, `: 0x`). Cached: parsing a
    thousand patterns is most of what building a SignatureSet costs, and a process that diagnoses many
    inputs (the corpus, the TUI, a watchdog) builds one per input.
    """
    try:
        best = _longest_run(sre_parse.parse(pattern), caseless=pattern.startswith("(?i)"))
    except re.error:
        return None
    return best if _long_enough(best) else None


MAX_ALTERNATIVES = 24


@lru_cache(maxsize=1)
def _anchor_version() -> str:
    """What the cached anchors depend on: this module's code (the anchor rules) and Python's regex parser."""
    digest = hashlib.blake2b(Path(__file__).read_bytes(), digest_size=8).hexdigest()
    return f"{digest}-py{sys.version_info[0]}.{sys.version_info[1]}"


@lru_cache(maxsize=8192)
def literal_anchors(pattern: str) -> tuple[str, ...]:
    """Literals one of which every match of ``pattern`` contains: its :func:`literal_anchor`, else one per
    alternative of an alternation every match goes through (`\bfoo bar\b|\bbaz qux\b` → `baz qux`, `foo bar`).
    Empty when there are none of at least 4 bytes (the pattern then runs on every line).

    A signature with no single anchor was compiled and run on every line of every input: 189 of ~3600, most of them
    alternations of messages (`\bMUSA error: operation not supported\b|\bmusaErrorNotSupported\b`).
    """
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return ()
    return _alternatives(parsed, pattern.startswith("(?i)"))


def _alternatives(items: Any, caseless: bool) -> tuple[str, ...]:
    run = _longest_run(items, caseless)  # on the whole pattern: literal_anchor's reading
    if _long_enough(run):
        return (run,)
    best: tuple[str, ...] = ()
    for op, arg in items:
        if _mandatory_group(op, arg):
            got = _alternatives(arg[-1], caseless)
        elif op is sre_constants.BRANCH:
            each = [_alternatives(b, caseless) for b in arg[1]]
            if not all(each):
                continue
            got = tuple(sorted({a for alts in each for a in alts}))
        else:
            continue
        if got and len(got) <= MAX_ALTERNATIVES and (not best or (len(got), -min(map(len, got))) < (len(best), -min(map(len, best)))):
            best = got
    return best


@dataclass(frozen=True)
class SigMatch:
    rule: Rule
    groups: dict[str, str]
    span: tuple[int, int]


class SignatureSet:
    """All signature rules compiled once; ``match(line)`` returns the rules a line fires.

    Only the rules whose literal anchor occurs in the line run their regex. Which anchors occur is
    cached per *digit-free form* of the line: floods and noise repeat one text with other numbers
    (time, pid, peer), and an anchor without digits that occurs in a line also occurs in its digit-free
    form, so the cached anchors are re-checked on the real line and the few anchors holding digits are
    always checked — the result is exact, and a repeated line costs a few substring tests.
    """

    CACHE_MAX = 65536

    def __init__(self, rules: Iterable[Rule]) -> None:
        # (rule, signature, anchors): a signature's regex is compiled the first time a line holds one of its anchors
        self.entries: list[tuple[Rule, Signature, tuple[str, ...]]] = []
        known = JsonCache("anchors", _anchor_version())  # an earlier run's anchors (parsing every pattern: ~0.25 s)
        for rule in rules:
            for sig in rule.signatures:
                got = known.get(sig.pattern)
                if isinstance(got, list) and all(isinstance(a, str) for a in got):
                    anchors = tuple(got)
                else:
                    anchors = literal_anchors(sig.pattern)
                    known.put(sig.pattern, list(anchors))
                self.entries.append((rule, sig, anchors))
        known.save()
        self._unanchored = [(r, sg) for r, sg, a in self.entries if not a]
        self._by_anchor: dict[str, list[tuple[Rule, Signature]]] = {}
        for r, sg, anchors in self.entries:
            for a in anchors:
                self._by_anchor.setdefault(a, []).append((r, sg))
        self._digit_anchors = [a for a in self._by_anchor if _DIGITS.search(a)]
        self._plain_anchors = [a for a in self._by_anchor if not _DIGITS.search(a)]
        self._cache: dict[str, tuple[str, ...]] = {}
        self._by_id = {r.id: r for r, _, _ in self.entries}
        self._family: frozenset[str] = frozenset()
        self.generic_ids: frozenset[str] = frozenset()  # the code-family rules (reported when nothing specific is)
        self._knows: dict[str, set[str]] = {}
        self.derived: dict[Any, Any] = {}  # what readers build from this set once (logstate.ScanSpec's pre-filter)
        if any(f"(?P<{g}>" in sg.pattern for _, sg, _ in self.entries for g in CODE_GROUPS):
            from msdoctor.engine.codes import family_rules

            self._family = family_rules() & set(self._by_id)
            self.generic_ids = self._family
            for r in self._by_id.values():  # the codes a specific rule is about: it keeps precedence on them
                text = " ".join([r.title, r.detects] + [sg.pattern for sg in r.signatures])
                self._knows[r.id] = set(_CODE_RE.findall(text))

    def candidates(self, line: str) -> list[tuple[Rule, Signature]]:
        out = list(self._unanchored)
        key = _DIGITS.sub("", line)
        plain = self._cache.get(key)
        if plain is None:
            plain = tuple(a for a in self._plain_anchors if a in key)
            if len(self._cache) >= self.CACHE_MAX:
                self._cache.clear()
            self._cache[key] = plain
        for anchor in plain:
            if anchor in line:
                out.extend(self._by_anchor[anchor])
        for anchor in self._digit_anchors:
            if anchor in line:
                out.extend(self._by_anchor[anchor])
        return out

    def match(self, line: str) -> list[SigMatch]:
        seen: set[str] = set()
        out: list[SigMatch] = []
        done: dict[str, re.Match[str] | None] = {}  # rules sharing one pattern run it once
        for rule, sg in self.candidates(line):
            if rule.id in seen:
                continue
            m = done[sg.pattern] if sg.pattern in done else done.setdefault(sg.pattern, sg.regex.search(line))
            if m:
                seen.add(rule.id)
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                out.append(SigMatch(rule, groups, m.span()))
        if self._family and any(sm.rule.id in self._family for sm in out):
            out = self._route(out, line)
        return out

    def _route(self, out: list[SigMatch], line: str) -> list[SigMatch]:
        """Code-family matches → the rule their code's data names; a specific rule that knows the code wins.

        The generic rules (COMM080, MEM040, NUM030, ENV050, PERF010) share one pattern for the CANN code
        grammar: which of them reports a code is data (``msdoctor/data/cann_codes.toml``), not regex.
        """
        from msdoctor.engine.codes import cuda_lookup, lookup, support_limit

        specific = [sm for sm in out if sm.rule.id not in self._family]
        known = {c for sm in specific for c in self._knows.get(sm.rule.id, ())}
        # Every code on the line (`EH9999: … runtime result = 507048`): the most specific one is reported —
        # an internal catch-all (E*9999) only wraps the error another code names.
        found: list[tuple[int, int, Any, SigMatch]] = []
        read: set[str] = set()  # the family rules share their patterns (CANN's five, CUDA's three): each read once
        for sm in out:
            if sm.rule.id not in self._family:
                continue
            for sg in sm.rule.signatures:
                if sg.pattern in read:
                    continue
                read.add(sg.pattern)
                for m in sg.regex.finditer(line):
                    groups = m.groupdict()
                    if groups.get("cuda_error") is not None:
                        info = cuda_lookup(groups["cuda_error"])
                    else:
                        code = next((groups[g] for g in CODE_GROUPS if groups.get(g)), None)
                        info = lookup(code) if code else None
                    if info is not None:
                        found.append((info.specificity, m.start(), info, SigMatch(sm.rule, {k: v for k, v in groups.items() if v}, m.span())))
        if not found:
            return specific
        _, _, info, best = min(found, key=lambda t: (t[0], t[1]))
        # A catalogue rule that read this very line as an error keeps it, whether or not it names the code
        # (`rtStreamSynchronize:ErrCode=507011, desc=[the model stream execute failed]` is COMM036's).
        if info.code in known or any(sm.rule.severity.value == "error" and sm.rule.role != "progress" for sm in specific):
            return specific
        # the exact code's rule, else its family's generic one (a rule set without the former: `bench/leaveout.py`,
        # a selection), else the generic rule whose pattern read it
        target = self._by_id.get(info.rule) or self._by_id.get(info.family_rule) or best.rule
        others = sorted({i.code for _, _, i, _ in found} - {info.code})
        groups = dict(best.groups, family_code=info.code, **({"other_codes": ",".join(others)} if others else {}),
                      **({"family_bare": "1"} if info.bare else {}))  # fmt: skip
        said = support_limit(line) if info.rule == "NUM030" and "ENV050" in self._by_id else None
        if said:  # the op's own message says the platform or package lacks it: the environment, not the inputs
            target, groups["unsupported"] = self._by_id["ENV050"], said
        return specific + [SigMatch(target, groups, best.span)]


def signature_set(catalogue: Catalogue) -> SignatureSet:
    """The catalogue's signature set, built once per catalogue (a catalogue does not change once loaded):
    building it costs ~0.1 s, which a process reading many inputs paid for each of them."""
    built = getattr(catalogue, "_signature_set", None)
    if built is None:
        built = SignatureSet(catalogue.select(kind="signature"))
        catalogue._signature_set = built  # type: ignore[attr-defined]
    return built
