"""Every signature regex stays linear on adversarial lines (a 41 s match on a 64 KB line was found).

For each signature, the rule's own example line is padded with a long run of one character class
(word characters, digits, spaces, non-space punctuation, the anchor repeated) at both ends, at 8 KiB and
at 64 KiB. A linear regex takes ~8x longer on the longer line; a quadratic one ~64x. The test asserts
the ratio (not a time), with room for a noisy host, and skips pairs too fast to time.
"""

from __future__ import annotations

import time

import pytest

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import literal_anchor

CAT = load_catalogue()
SIGS = [(r.id, i, s) for r in CAT for i, s in enumerate(r.signatures)]
SMALL, LARGE = 8 * 1024, 64 * 1024
# A linear search of 8 KiB takes microseconds; half a second there is a quadratic (or worse) regex,
# whose 64 KiB run would take a minute: fail without running it.
SMALL_LIMIT_S = 0.5


def _pads(anchor: str) -> list[str]:
    return ["a", "1", " ", "/", "a ", "a:", anchor or "x", "\t"]


def _time(rx, line: str) -> float:
    best = float("inf")
    for _ in range(1):
        t = time.thread_time()
        rx.search(line)
        best = min(best, time.thread_time() - t)
    return best


@pytest.mark.parametrize(("rule", "i", "sig"), SIGS, ids=[f"{r}[{i}]" for r, i, _ in SIGS])
def test_signature_is_linear(rule: str, i: int, sig) -> None:  # noqa: ANN001
    r = CAT.get(rule)
    example = next((ln for ln in (r.example if r else '').splitlines() if sig.regex.search(ln)), None)
    anchor = literal_anchor(sig.pattern) or ""
    base = example or anchor
    for pad in _pads(anchor):
        for where in ("before", "after"):
            def line(n: int, pad: str = pad, where: str = where) -> str:
                run = (pad * (n // len(pad) + 1))[:n]
                return {"before": run + base, "after": base + run, "both": run + base + run}[where]
            small = _time(sig.regex, line(SMALL))
            assert small < SMALL_LIMIT_S, (
                f"{rule} signature {i} is super-linear: {small:.2f} s on an 8 KiB line (pad {pad!r} {where})")
            large = _time(sig.regex, line(LARGE))
            if large < 0.05:  # too fast to be a problem, or to be timed
                continue
            small = max(small, 1e-3)
            if large / small >= 24 and large < 1.0:  # maybe a hiccup of a loaded host: time again
                small = max(min(small, *(_time(sig.regex, line(SMALL)) for _ in range(3))), 1e-3)
                large = min(large, _time(sig.regex, line(LARGE)))
            assert large / max(small, 1e-4) < 24, (
                f"{rule} signature {i} grows super-linearly: {small * 1e3:.1f} ms at 8 KiB, "
                f"{large * 1e3:.1f} ms at 64 KiB (pad {pad!r} {where})")
