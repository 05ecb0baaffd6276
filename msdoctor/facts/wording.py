"""A guess at the area of an error that neither a rule nor the keyword fallback names: word statistics.

The keyword fallback (:mod:`msdoctor.facts.logfamily`, rules X099) decides only when hand-written wording of
an area clearly wins; most unknown errors leave it undecided. This second stage reads the same error blocks
as a bag of words and compares them with the words that error lines of each area use, counted over every
rule's title and example and over the first error blocks of the real-world corpus
(``msdoctor/data/wording_model.json``, built by ``python -m msdoctor.wordinggen``). It is a softmax
(multinomial logistic) regression over word *presence*, trained with an L2 penalty: each word carries a weight
per area, an area's score is its bias plus the weights of the words present, and the softmax of the scores is
the probability. Unlike naive Bayes, which counted each word's log-ratio as if words were independent (and so
let the boilerplate of CANN's reports, `code`, `function`, `make`, `files`, vote NUM many times over), training
gives a word only the weight the other words do not already carry. Words seen in at least two documents vote,
and at least two must vote; generic words ("failed", "call", the wrapper `ERR00100 PTA call acl api failed`)
are stop words and say nothing.

Its answer is a GUESS, never a verdict: the finding (rules X097) is `info`, it never heads the report, and
the message names the words that set its area apart. Measured (bench/wording.py: ten-fold cross-validation on
the corpus, the sealed blind sets, and a split by the date a case was collected): on errors the keyword lists
leave undecided it answers (p 0.4 or more) about nineteen times in twenty; a guess at p 0.9 or more was right
nine times in ten, between 0.6 and 0.9 about six in ten (the message calls those weak), between 0.4 and 0.6
about four in ten (low-confidence); see bench/RESULTS.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from msdoctor.facts.logfamily import AREAS, exception_type, message

WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{1,60}|[\u4e00-\u9fff]{2,12}")
CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
CODE_RE = re.compile(r"\b(E[A-Z])(\d)\d{3}\b")  # CANN's error codes: family (EZ) and class (EZ1) vote
# ACL's numeric return codes by family (`507035` -> 507, `161002` -> 161, `100000` -> 100: the first digit the kind,
# the next two the module; msdoctor/data/cann_codes.toml [acl_families]), not inside a longer number or a version
ACL_CODE_RE = re.compile(r"(?<![\d.x])([1-5](?:00|07|45|61))\d{3}(?![\d.])")
# Word pairs with a stop word in them (`not supported`, `too large`, `out of`, `no such`, `does not`, `call acl`):
# the stop list drops each such word alone, yet the pair says what failed, or which wrapper said it. Measured
# (bench/wording.py on 2660 cases): ten-fold 915 -> 971 guesses right, 297 -> 272 wrong; by collection date 432 ->
# 468 right, 242 -> 226 wrong. Pairs of two stop words count: leaving out those with a path or wrapper word gave
# 947 / 273 and 447 / 229. The raw words, apostrophes kept (`can't`).
PAIR_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_']{0,60}")
# Words that say only that something failed, or that are the path/prefix of a wrapper line: torch_npu's
# `ERR00100 PTA call acl api failed` / `ERR99999 UNKNOWN applicaiton exception`, its source paths
# (`torch_npu/csrc/core/…`, `build/CMakeFiles/torch_npu.dir/compiler_depend.ts`), CANN's `Inner error
# is reported as above`, and English function words.
STOP = frozenset("""
the a an of to in on for is was be and or not no with at by from this that these those it its as are has have
had line file error errors failed fail failure can cannot could will would should may might must do does did
done if then else when while but so than too very also only just more most some any all each other such own
same into onto out over under up down off again further once here there where why how what which who whom
one two three first last new old use used using call calls called get got set see want need please try check
possible directly current following occurred occurs happen happened reason detail details info message
py cpp bin opt usr home root lib python site packages src tools main run self
err00100 00100 err99999 99999 err02200 02200 pta applicaiton application unknown c10 csrc core build
cmakefiles compiler depend compiler_depend c10_npu ts torch_npu dir inner reported above acl aclrt stream synchronize npustream
npusynchronizedevice aclrtsynchronizedevice synchronizedevice err api
""".split())
MAX_LINE = 4096
MAX_BLOCKS = 3  # the first error blocks read as one bag of words


@dataclass(frozen=True)
class Guess:
    area: str
    probability: float  # the winning area's share of the softmax over the areas' scores
    words: tuple[str, ...]  # the words that voted for it most, strongest first
    runner_up: str | None


def shown(word: str) -> str:
    """A voting word as a reader knows it: `exc:IndexError` -> IndexError, `code:EZ1` -> EZ1xxx, `acl:507` ->
    507xxx, `mod:x` -> x/ (a word pair, `not supported`, as it is)."""
    kind, _, rest = word.partition(":")
    if not rest:
        return word
    return {"exc": rest, "code": rest + "x" * (6 - len(rest)), "acl": f"{rest}xxx", "mod": f"{rest}/"}.get(kind, word)


def _parts(word: str) -> Iterable[str]:
    lw = word.lower()
    yield lw
    if "_" in word:
        yield from (p for p in lw.split("_") if len(p) > 2)
    if any(ch.isupper() for ch in word[1:]):
        for chunk in word.split("_"):
            yield from (p.lower() for p in CAMEL_RE.findall(chunk) if len(p) > 2)


def tokens(lines: Iterable[str], frames: Iterable[str] = ()) -> set[str]:
    """The words of an error block as the model counts them: message words (a line's prefix removed, camelCase
    and snake_case split too), the pairs of adjacent words one of which is a stop word, CANN code family and
    class, ACL return-code family, the exception type, the package of the two innermost frames."""
    out: set[str] = set()
    for ln in lines:
        if not ln:
            continue
        text = message(ln[:MAX_LINE])
        for c in CODE_RE.finditer(text):
            out.update((f"code:{c.group(1)}", f"code:{c.group(1)}{c.group(2)}"))
        for c in ACL_CODE_RE.finditer(text):
            out.add(f"acl:{c.group(1)}")
        for w in WORD_RE.findall(text):
            out.update(p for p in _parts(w) if p not in STOP and 2 <= len(p) <= 30)
        raw = [w.lower() for w in PAIR_WORD_RE.findall(text)]
        out.update(f"{a} {b}" for a, b in zip(raw, raw[1:], strict=False) if a in STOP or b in STOP)
        t = exception_type(ln)
        if t:
            out.add(f"exc:{t}")
    for f in list(frames)[-2:]:
        pkg = f.split("/site-packages/")[-1].split("/")[0].lower()
        if pkg:
            out.add(f"mod:{pkg}")
    return out


@dataclass(frozen=True)
class Model:
    bias: dict[str, float]  # per area
    weights: dict[str, dict[str, float]]  # per voting word: its weight per area (an area not named: 0)
    min_words: int
    threshold: float

    def guess(self, toks: Iterable[str]) -> Guess | None:
        """The area the words point to, or None (fewer than min_words voting words, or no area reaches the
        threshold probability)."""
        voting = sorted(w for w in set(toks) if w in self.weights)
        if len(voting) < self.min_words:
            return None
        scores = {a: b + sum(self.weights[w].get(a, 0.0) for w in voting) for a, b in self.bias.items()}
        ranked = sorted(scores, key=lambda a: (-scores[a], AREAS.index(a) if a in AREAS else 99))
        best = ranked[0]
        p = 1.0 / sum(math.exp(v - scores[best]) for v in scores.values())
        if p < self.threshold:
            return None
        runner = ranked[1] if len(ranked) > 1 else None
        # the words that set the winner apart from the runner-up, strongest first
        lead = {w: self.weights[w].get(best, 0.0) - (self.weights[w].get(runner, 0.0) if runner else 0.0) for w in voting}
        words = tuple(shown(w) for w, r in sorted(lead.items(), key=lambda kv: (-kv[1], kv[0])) if r > 0)[:6]
        return Guess(best, round(p, 3), words, runner)


def from_doc(doc: Mapping[str, Any]) -> Model:
    p = doc["params"]
    bias = {a: float(v) for a, v in doc["bias"].items()}
    for a in bias:
        if a not in AREAS:
            raise ValueError(f"wording_model.json: unknown area {a!r}")
    weights = {w: {a: float(v) for a, v in per.items() if a in bias} for w, per in doc["weights"].items()}
    return Model(bias, weights, int(p["min_words"]), float(p["threshold"]))


@cache
def model() -> Model:
    text = resources.files("msdoctor.data").joinpath("wording_model.json").read_text(encoding="utf-8")
    return from_doc(json.loads(text))


def guess_blocks(blocks: Iterable[tuple[list[str], list[str]]]) -> Guess | None:
    """The guess for the first MAX_BLOCKS error blocks (lines, innermost frames) read as one bag of words."""
    toks: set[str] = set()
    for i, (lines, frames) in enumerate(blocks):
        if i >= MAX_BLOCKS:
            break
        toks |= tokens(lines, frames)
    return model().guess(toks)
