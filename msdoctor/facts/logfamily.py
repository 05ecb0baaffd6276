"""The area of an error no rule recognises, from the wording of error messages (issue 11, blind holdout).

The keyword lists are data (``msdoctor/data/error_families.toml``): per area, weighted regexes of the nouns
and phrases an error message of that area uses in any framework (another allocator's out-of-memory, another
framework's shape check), plus the exception type. A block (the error line and up to two lines of its
block) is scored per area; the top area wins only with a minimum score and a lead over the runner-up, so a
line with no clear winner stays unrecognised: better missed than misleading.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from msdoctor.engine.catalogue import LinePattern

AREAS = ("COMM", "MEM", "NUM", "ENV", "PAR", "DATA", "CKPT", "RT", "PERF")
EXC_RE = re.compile(r"\b(?P<type>[A-Z]\w{0,60}?(?:Error|Exception))\b")
MAX_LINE = 4096
# A command's argument vector as Python prints a list (DeepSpeed's launcher: `[ERROR] [launch.py:320:sigkill_handler]
# ['/opt/conda/bin/python', '-u', 'train.py', '--data_path', '../data/x.json', …] exits with return code = -9`,
# subprocess's `Command '['cmake', '-DBUILD_X=on', …]' returned non-zero exit status 1`), also a paste's line cut
# inside it (`gt_len', '1024', '--data_path', …`): its options and paths name the job's inputs, not the fault, so they
# are no words of an area (round 76: `--data_path` and `_ckpt_path` voted DATA / CKPT on a SIGKILL). A run of three
# quoted items at least one of which is an option (`'-u'`, `'--model'`); a list of keys or names with no option stays.
ARGV_RUN_RE = re.compile(r"(?:^[^'\s]{1,80}'|'[^'\n]{0,300}')(?:, ?'[^'\n]{0,300}'){2,}")
ARGV_OPTION_RE = re.compile(r"'-{1,2}[A-Za-z]")
# Ray names the task or actor method that raised, with its process: `RayTaskError(DeferredCudaCallError):
# ray::_RayTrainWorker__execute.get_next() (pid=10481, ip=10.5.166.177, actor_id=…, repr=<ray.train._internal.…>)`.
# The process parenthesis (pid, ip, node and actor ids, the actor's repr) and Ray Train's own wrapper method
# (`_RayTrainWorker__execute.get_next`) are no words of an area: `get_next` voted DATA on a CUDA lazy-init failure
# (round 77 f, ray-39672). A framework's or the user's method (`LLMRayActor.init_process_group`, `ReadParquet`,
# `CheckpointEngineWorker.update_weights`) names the phase that failed and stays.
RAY_TASK_RE = re.compile(r"\bray::_RayTrainWorker__execute\.get_next\(\)|(?<=\(\)) \(pid=\d{1,10}, ip=[^\n]{0,600}\)$")


@dataclass(frozen=True)
class Family:
    area: str
    keywords: tuple[tuple[LinePattern, str, float], ...]


@dataclass(frozen=True)
class Families:
    areas: tuple[Family, ...]
    exception_types: dict[str, tuple[str, float]]
    min_score: float
    margin: float
    tie_break: tuple[str, ...]
    modules: dict[str, tuple[str, float]] = field(default_factory=dict)
    frames: tuple[tuple[re.Pattern[str], str, float], ...] = ()
    calls: tuple[tuple[re.Pattern[str], str], ...] = ()  # the call a cut traceback stopped in → its area
    support: Support | None = None  # `<backend> is not supported / does not support X`: a statement of support
    absence: Absence | None = None  # `X: No such file or directory`, `cannot find X`: a statement of absence
    cause: Cause | None = None  # `X failed because Y`: the cause clause outweighs the wrapper (round 48)


@dataclass(frozen=True)
class Support:
    """A statement that something is not supported / available / implemented / built, whose subject is a
    back-end or a library (``[support]`` of error_families.toml): its ``area`` (ENV) gets ``weight``, and the
    words of the ``discount`` areas inside the statement (the subject's own nouns: `ProcessGroupHCCL`, `NCCL`)
    do not count, so the predicate outweighs the noun. A statement about an argument (``exclude``: a dtype, a
    shape, an address) is the caller's or the network's, not the installation's, and is no such statement.

    ``statements`` match the predicate and its object; the subject is the clause before it, read back here (a
    regex that reads it would try every start of the line): up to CLAUSE characters, to a sentence's or a
    clause's stop (`.` `,` `;` `:` `!` `?`, a line's start) but across a dotted or a C++ name (`torch.x`, `c10d::X`)."""

    area: str
    weight: float
    discount: frozenset[str]
    statements: tuple[re.Pattern[str], ...]
    subjects: re.Pattern[str]
    exclude: re.Pattern[str]

    CLAUSE = 60

    @classmethod
    def clause_start(cls, text: str, end: int, limit: int = 0) -> int:
        i, lo = end, max(0, end - (limit or cls.CLAUSE))
        while i > lo:
            c = text[i - 1]
            if c == ":" and i >= 2 and text[i - 2] == ":":  # `c10d::ProcessGroupHCCL`
                i -= 2
                continue
            if c == "." and i < len(text) and (text[i].isalnum() or text[i] == "_"):  # `torch.distributed`
                i -= 1
                continue
            if c in ".,;:!?\n":
                break
            i -= 1
        return i

    def spans(self, block: str) -> list[tuple[int, int, str]]:
        out = []
        for rx in self.statements:
            for m in rx.finditer(block):
                start = self.clause_start(block, m.start())
                text = block[start : m.end()]
                if self.subjects.search(text) and not self.exclude.search(text):
                    out.append((start, m.end(), text.strip()))
        return out


# -- round 48: cause clauses ([cause] of error_families.toml) --------------------------------------------------------
@dataclass(frozen=True)
class Cause:
    """A line that states its own cause (`Load checkpoint failed because device memory is not enough`, `… failed,
    reason: Y`, `caused by: Y`, `due to Y`, `Possible cause: Y`, `原因: Y`): the WRAPPER (the line's text before the
    first marker, and the marker) names what failed, the CAUSE (after the marker, to the line's end) why. When the
    cause's own words name an area, a keyword of another area found only in a wrapper counts ``wrapper_factor`` of its
    weight, so the cause's nouns outweigh the wrapper's; a cause without area words leaves the wrapper's words whole."""

    markers: re.Pattern[str]
    wrapper_factor: float

    def wrappers(self, block: str) -> list[tuple[int, int, str]]:
        """The wrapper spans (start, end) of the block's lines that have a marker, each with its cause's text."""
        out, pos = [], 0
        for line in block.split("\n"):
            m = self.markers.search(line)
            if m and m.start() > 0:  # the marker itself (`reason=[driver error:`) is the wrapper's
                out.append((pos, pos + m.end(), line[m.end() :]))
            pos += len(line) + 1
        return out


def _cause_wrappers(fam: Families, block: str) -> tuple[list[tuple[int, int]], set[str]]:
    """The wrapper spans of the block and the areas its cause clauses name by their own words (none: no discount)."""
    if not fam.cause:
        return [], set()
    found = fam.cause.wrappers(block)
    if not found:
        return [], set()
    causes = "\n".join(t for _s, _e, t in found)
    named = {f.area for f in fam.areas if any(rx.search(causes) for rx, _p, _w in f.keywords)}
    return ([(s, e) for s, e, _t in found], named) if named else ([], set())


# `cannot import name 'build_dataset_loader' from 'mindformers.dataset.dataloader'`, `failed to import X`: the object of
# an import is a module or a name in one (an install or a release that lacks it: ENV in every corpus case of the
# shape), never the dataset or the checkpoint its module is named after
IMPORT_VERB_RE = re.compile(r"\bimport\b", re.I)
IMPORT_AREAS = frozenset({"ENV"})


@dataclass(frozen=True)
class Absence:
    """A statement that something was not found, does not exist or could not be found / opened / loaded
    (``[absence]`` of error_families.toml), whose OBJECT names the area: a header, a library, a package, a module,
    a command → ENV; a checkpoint, a weight → CKPT; a dataset, an image, an annotation → DATA (``objects``). The
    object is the clause before the predicate (``statements``: `hccl/hccl_network_pub.h: No such file or directory`,
    `The file X does not exist`), read back as Support reads a subject but over a path's length and across one `X:`
    stop, and the words after it up to the sentence's stop (`No such file or directory: 'x.yaml'`); a verb's
    (``verbs``: `cannot find X`, `No package metadata was found for X`) is only the words after it. Each area
    its object names gets ``weight``; words of the other areas inside the statement do not count (`.metadata` in
    `No package metadata` is no checkpoint's, `hccl` in a missing header's path is no collective's). A statement
    whose object names no area, or every area equally, changes nothing."""

    weight: float
    statements: tuple[re.Pattern[str], ...]  # `X: No such file`, `X does not exist`: the object before, or after
    verbs: tuple[re.Pattern[str], ...]  # `cannot find X`, `No module named X`: the object after only
    objects: tuple[tuple[str, re.Pattern[str]], ...]

    CLAUSE = 200
    AFTER = re.compile(r"(?:[^.,;!?\n]|\.(?=\S)){0,120}")  # to the sentence's stop, across `a.h` and `torch.x`

    def subject_start(self, text: str, end: int) -> int:
        i = Support.clause_start(text, end, self.CLAUSE)
        if not text[i:end].strip(" \t'\"`") and i >= 1 and text[i - 1] == ":":  # `path/x.h: No such file`
            i = Support.clause_start(text, i - 1, self.CLAUSE)
        return i

    def spans(self, block: str) -> list[tuple[int, int, frozenset[str], str]]:
        out = []
        for rx, before in [*((r, True) for r in self.statements), *((r, False) for r in self.verbs)]:
            for m in rx.finditer(block):
                start = self.subject_start(block, m.start()) if before else m.start()
                after = self.AFTER.match(block, m.end())
                end = after.end() if after else m.end()
                text = block[start:end]
                if not before and IMPORT_VERB_RE.search(m.group(0)):
                    areas = IMPORT_AREAS  # what an import lacks is code, whatever its module is named after
                else:
                    areas = frozenset(a for a, orx in self.objects if orx.search(text))
                if areas:
                    out.append((start, end, areas, text.strip()))
        return out


@dataclass(frozen=True)
class Classification:
    area: str
    score: float
    runner_up: str | None
    runner_up_score: float
    keywords: tuple[str, ...]  # what decided: the matched words of the winning area
    line: str


def parse(doc: dict[str, Any]) -> Families:
    fams = []
    extra = doc.get("extra", {})
    for area in set(extra) - set(doc["areas"]):
        raise ValueError(f"error_families.toml: [extra.{area}] has no [areas.{area}]")
    for area, body in doc["areas"].items():
        if area not in AREAS:
            raise ValueError(f"error_families.toml: unknown area {area!r}")
        pairs = list(body["keywords"]) + list(extra.get(area, {}).get("keywords", []))
        if doc.get("mismatch", {}).get("area") == area:  # round 48: attribute / signature mismatches ([mismatch])
            pairs += list(doc["mismatch"]["keywords"])
        # `…报NotImplementedError`: the CJK form of a keyword is compiled for the first text with other characters
        # (compiling all ~900 CJK forms up front was three quarters of the regex compiling of a corpus run)
        kws = tuple((LinePattern(p, re.I), p, float(w)) for p, w in pairs)
        fams.append(Family(area, kws))
    if "mismatch" in doc and doc["mismatch"].get("area") not in doc["areas"]:
        raise ValueError(f"error_families.toml: [mismatch] names unknown area {doc['mismatch'].get('area')!r}")
    exc = {k: (str(v[0]), float(v[1])) for k, v in doc.get("exception_types", {}).items()}
    mods = {k: (str(v[0]), float(v[1])) for k, v in doc.get("modules", {}).items()}
    for name, (area, _w) in {**exc, **mods}.items():
        if area not in AREAS:
            raise ValueError(f"error_families.toml: {name} names unknown area {area!r}")
    frames = tuple((re.compile(p), str(a), float(w)) for p, a, w in doc.get("frames", {}).get("paths", []))
    for _rx, area, w in frames:
        if area not in AREAS or w > 2.0:
            raise ValueError(f"error_families.toml: a [frames] path names unknown area {area!r} or weighs more than 2")
    calls = tuple((re.compile(p), str(a)) for p, a in doc.get("frames", {}).get("calls", []))
    for _rx, area in calls:
        if area not in AREAS:
            raise ValueError(f"error_families.toml: a [frames] call names unknown area {area!r}")
    cz = doc.get("cause")
    cause = Cause(re.compile("|".join(f"(?:{p})" for p in cz["markers"]), re.I), float(cz["wrapper_factor"])) if cz else None
    order = tuple(doc.get("tie_break", AREAS))
    sup = doc.get("support")
    support = None
    if sup:
        for area in [sup["area"], *sup.get("discount", [])]:
            if area not in AREAS:
                raise ValueError(f"error_families.toml: [support] names unknown area {area!r}")
        support = Support(str(sup["area"]), float(sup["weight"]), frozenset(sup.get("discount", [])),
                          tuple(re.compile(p, re.I) for p in sup["statements"]),
                          re.compile("|".join(f"(?:{p})" for p in sup["subjects"]), re.I),
                          re.compile("|".join(f"(?:{p})" for p in sup.get("exclude", ["(?!)"])), re.I))  # fmt: skip
    ab = doc.get("absence")
    absence = None
    if ab:
        for area in ab["objects"]:
            if area not in AREAS:
                raise ValueError(f"error_families.toml: [absence] names unknown area {area!r}")
        absence = Absence(float(ab["weight"]), tuple(re.compile(p, re.I) for p in ab["statements"]),
                          tuple(re.compile(p, re.I) for p in ab.get("verbs", [])),
                          tuple((a, re.compile("|".join(f"(?:{p})" for p in ps), re.I)) for a, ps in ab["objects"].items()))
    return Families(tuple(fams), exc, float(doc["min_score"]), float(doc["margin"]), order, mods, frames, calls,
                    support, absence, cause)


@cache
def families() -> Families:
    text = resources.files("msdoctor.data").joinpath("error_families.toml").read_text(encoding="utf-8")
    return parse(tomllib.loads(text))


def message(line: str) -> str:
    """The message of a log line, without its level/pid/time/source-file prefix (a path is no evidence)."""
    from msdoctor.facts.logformats import IPYTHON_HEADER_NOTE, parse_line, strip_prefixes

    line = line[:MAX_LINE].replace(IPYTHON_HEADER_NOTE, "")  # msdoctor's own note is no word of the log (tensorflow-59890)
    rec = parse_line(line)
    if rec.grammar == "plain":  # a launcher's or a logger's prefix (`[ts] [pid] [mod] [ERROR] [file.cpp:1] `)
        rec = parse_line(strip_prefixes(line)[0])
    if rec.grammar == "python-exc" and rec.exc_type and "." in rec.exc_type:  # `pyarrow.lib.ArrowInvalid`: its module says
        return _without_argv(f"{rec.exc_type}: {rec.message.strip()}")
    return _without_argv(rec.message.strip() or line)


def _without_argv(text: str) -> str:
    """``text`` without the argument vectors it quotes (:data:`ARGV_RUN_RE`) and Ray's task names (:data:`RAY_TASK_RE`)."""
    if "ray::" in text:
        text = RAY_TASK_RE.sub(" ", text)
    if "', '" not in text and "','" not in text:
        return text
    return ARGV_RUN_RE.sub(lambda m: " " if ARGV_OPTION_RE.search(m.group(0)) else m.group(0), text)


def exception_type(text: str) -> str | None:
    m = EXC_RE.search(text[:MAX_LINE])
    return m.group("type") if m else None


def _merged(spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Disjoint sorted intervals covering ``spans``, as their starts and ends (for a bisect per word)."""
    starts: list[int] = []
    ends: list[int] = []
    for s, e in sorted(spans):
        if ends and s <= ends[-1]:
            ends[-1] = max(ends[-1], e)
        else:
            starts.append(s)
            ends.append(e)
    return starts, ends


def _inside(pos: int, merged: tuple[list[int], list[int]]) -> bool:
    i = bisect.bisect_right(merged[0], pos) - 1
    return i >= 0 and pos < merged[1][i]


def scores(lines: list[str], fam: Families | None = None, frames: list[str] | None = None) -> dict[str, tuple[float, list[str]]]:
    """Per area: the score of the block and the words that matched (each keyword counts once). ``frames``: the
    innermost traceback frames of the exception (source paths); each area counts its first matching path once."""
    fam = fam or families()
    block = "\n".join(message(ln) for ln in lines if ln)
    out: dict[str, tuple[float, list[str]]] = {}
    sup, ab = fam.support, fam.absence
    spans = sup.spans(block) if sup else []
    absent = ab.spans(block) if ab else []
    wraps, named = _cause_wrappers(fam, block)
    wrapped = _merged(wraps)
    for f in fam.areas:
        total, words = 0.0, []
        skip = [(s, e) for s, e, _t in spans] if sup and f.area in sup.discount else []
        skip += [(s, e) for s, e, areas, _t in absent if f.area not in areas]
        merged = _merged(skip)
        for rx, _pat, w in f.keywords:
            if skip:  # a subject's noun inside a statement of support, a word beside an absent object: not counted
                m = next((m for m in rx.finditer(block) if not _inside(m.start(), merged)), None)
            else:
                m = rx.search(block)
            if m and wraps and f.area not in named and _inside(m.start(), wrapped):  # a wrapper's noun ([cause])
                whole = next((m2 for m2 in rx.finditer(block)
                              if not _inside(m2.start(), wrapped) and not (skip and _inside(m2.start(), merged))), None)
                if whole is None:  # outside every wrapper
                    total += w * fam.cause.wrapper_factor  # type: ignore[union-attr]
                    words.append(m.group(0))
                    continue
                m = whole
            if m:
                total += w
                words.append(m.group(0))
        if sup and spans and f.area == sup.area:
            total += sup.weight
            words.append(spans[0][2][:80])
        mine = [t for _s, _e, areas, t in absent if f.area in areas]
        if ab and mine:
            total += ab.weight
            words.append(mine[0][:80])
        if total:
            out[f.area] = (total, words)
    from msdoctor.facts.logformats import parse_line

    for ln in lines:  # the module the line's grammar names (`[ERROR] HCCL(…)`), once per block
        mod = parse_line((ln or "")[:MAX_LINE]).module
        if mod and mod in fam.modules:
            area, w = fam.modules[mod]
            s, words = out.get(area, (0.0, []))
            out[area] = (s + w, [*words, f"[{mod}]"])
            break
    counted: set[str] = set()
    for path in reversed(frames or []):  # innermost first
        for frx, area, w in fam.frames:
            if area not in counted and frx.search(path):
                counted.add(area)
                s, words = out.get(area, (0.0, []))
                out[area] = (s + w, [*words, f"frame {path.rsplit('/', 2)[-2] if path.count('/') >= 2 else path}"])
    for ln in lines:
        t = exception_type(ln or "")
        if t and t in fam.exception_types:
            area, w = fam.exception_types[t]
            s, words = out.get(area, (0.0, []))
            out[area] = (s + w, [*words, t] if t not in words else words)
            break
    return out


def classify(lines: list[str], fam: Families | None = None, frames: list[str] | None = None) -> Classification | None:
    """The area of an error block, or None when no area clearly wins (abstain)."""
    fam = fam or families()
    sc = scores([ln for ln in lines if ln], fam, frames)
    if not sc:
        return None
    order = {a: i for i, a in enumerate(fam.tie_break)}
    ranked = sorted(sc.items(), key=lambda kv: (-kv[1][0], order.get(kv[0], 99)))
    (area, (top, words)), rest = ranked[0], ranked[1:]
    second, second_score = (rest[0][0], rest[0][1][0]) if rest else (None, 0.0)
    if top < fam.min_score or top - second_score < fam.margin:
        return None
    return Classification(area, top, second, second_score, tuple(words), lines[0] if lines else "")


# The PAR keywords are mostly an operator's shape words (`shape`, `dimension`, `broadcast`, `must match`): like the
# rules PAR001 / PAR010 / PAR030 and their NUM twins (docs/architecture.md, "A rule's twin"), they name a sharding
# fault only where the input names a parallel layout (msdoctor/facts/layout.py); elsewhere they are an operator's
# input error, NUM. A winning word that itself names the split (a strategy, a shard, a pipeline, a parallel size, a
# mesh, micro-batches, a divisibility, `TP` / `EP`: MindIE's `Invalid TP number per node`; a distributed wrapper's own
# word: DTensor, ZeRO-3, FSDP's FlatParameter, DDP's `mark a variable ready only once`) keeps PAR.
SPLIT_WORD_RE = re.compile(r"strateg|shard|pipeline|parallel|device[_ ]num|mesh|micro-?batch|divisible|pp_size|切分"
                           r"|\b(?:tp|pp|ep|cp|sp|dp)\b"
                           # the distributed wrappers' own words (round 69): DTensor, ZeRO-3's partitioned parameters,
                           # FSDP's flat parameters and flattening, DDP's reducer, a process group's size check
                           r"|dtensor|zero[-_ ]?(?:3|stage)|zeroparamstatus|ds_status|flatparam|flatten integer"
                           r"|ready only once|new group", re.I)


def by_layout(c: Classification | None, layout: bool) -> Classification | None:
    """``c`` with a PAR verdict read as NUM where the input names no parallel layout and no winning word names a
    split (the keyword fallback's side of the PAR/NUM twins)."""
    if c is None or c.area != "PAR" or layout or any(SPLIT_WORD_RE.search(w) for w in c.keywords):
        return c
    return replace(c, area="NUM")
