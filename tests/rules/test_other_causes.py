"""A rule's `other_causes` is a measured claim: the figures it quotes are recounted from the blind files they
cite, and `msdoctor logs` shows the text beside a verdict of that rule (never instead of it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from msdoctor.cli import main
from msdoctor.engine.catalogue import load_catalogue

ROOT = Path(__file__).resolve().parents[2]
BLIND = ROOT / "tests" / "realworld" / "blind"
RULES = [r for r in load_catalogue() if r.other_causes]
SCORE_RE = re.compile(r"^(found|partial|misleading) +\S+ +[A-Z]+ +headline=([A-Z]+\d{3,4}) ", re.M)


def blind_headlines(first: int, last: int, rule: str) -> tuple[int, int]:
    """(headlines of ``rule`` in another area, all its headlines) over the blind files of rounds first..last."""
    other = total = 0
    for f in sorted(BLIND.glob("round*.txt")):
        m = re.match(r"round(\d+)", f.name)
        if not m or not first <= int(m.group(1)) <= last:
            continue
        for status, head in SCORE_RE.findall(f.read_text(encoding="utf-8")):
            if head == rule:
                total += 1
                other += status == "misleading"
    return other, total


def test_some_rules_carry_other_causes():
    assert {"NUM030", "ENV050", "NUM010"} <= {r.id for r in RULES}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_the_quoted_figure_is_recounted_from_the_blind_files(rule):
    text = " ".join((rule.other_causes or "").split())
    rounds = re.search(r"blind rounds (\d+)[–-](\d+)", text)
    figure = re.search(r"in (\d+) of (\d+) first-sight cases", text)
    assert rounds and figure, f"{rule.id}: other_causes must cite its blind rounds and 'in N of M first-sight cases'"
    got = blind_headlines(int(rounds.group(1)), int(rounds.group(2)), rule.id)
    assert got == (int(figure.group(1)), int(figure.group(2))), f"{rule.id}: blind files give {got[0]} of {got[1]}"


def _logs(path: Path, *extra: str) -> tuple[int, str]:
    import contextlib
    import io

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stdout(out):
        rc = main(["logs", *extra, str(path)])
    out.flush()
    return rc, raw.getvalue().decode("utf-8")


def test_a_kernel_code_verdict_shows_its_other_causes_beside_it(tmp_path, capsys):
    log = tmp_path / "paste.log"
    log.write_text("EZ9999: Inner Error!\nEZ9999  [InferShape] The k-axis of a(64) and b(9216) tensors must be the "
                   "same[FUNC:InferShape][FILE:matrix_calculation_ops.cc][LINE:1402]\n", encoding="utf-8")  # fmt: skip
    rc, out = _logs(log, "--json")
    verdict = json.loads(out)["root_cause"]
    assert verdict["rule"] == "NUM030" and "version.cfg" in verdict["other_causes"]
    main(["logs", str(log)])
    text = capsys.readouterr().out
    assert "Root cause" in text and "when it is not that: If the op's inputs look right" in text


def test_a_verdict_of_a_rule_without_other_causes_has_none(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("EI0006: 2024-08-05-18:15:21.270.506 Getting socket times out. Reason: Remote Rank did not send "
                   "the data in time. Please check the reason for the rank being stuck\n", encoding="utf-8")  # fmt: skip
    _, out = _logs(log, "--json")
    verdict = json.loads(out)["root_cause"]
    assert verdict["rule"] and load_catalogue().get(verdict["rule"]).other_causes is None
    assert "other_causes" not in verdict
