from __future__ import annotations

import io

from rich.console import Console

from msdoctor.engine.model import Evidence, Finding, NotEvaluated, Severity
from msdoctor.report.render import exit_code, render_findings


def _finding(sev: Severity) -> Finding:
    return Finding(rule="COMM001", severity=sev, title="peer stopped", message="rank 0 waited for rank 1",
                   cause="c", fix="fix rank 1", rank=0, evidence=[Evidence("wait receiving [1]", "w.log", 7)])


def test_ascii_marks_survive_rich_markup(monkeypatch):
    monkeypatch.setenv("MSDOCTOR_ASCII", "1")
    buf = io.StringIO()
    render_findings([_finding(Severity.ERROR)], [NotEvaluated("ENV101", "no CANN")], out=Console(file=buf, width=200))
    text = buf.getvalue()
    assert "[x] COMM001 peer stopped (rank 0)" in text
    assert "w.log:7: wait receiving [1]" in text and "[?] 1 rule(s) not evaluated" in text


def test_exit_code_follows_severity():
    assert exit_code([_finding(Severity.WARNING)]) == 0
    assert exit_code([_finding(Severity.WARNING), _finding(Severity.ERROR)]) == 1


def test_fix_line_ends_at_a_sentence_end_not_at_the_wrapped_line_break():
    # Rule files hard-wrap their text; the short form must not stop mid-sentence at the line break.
    f = _finding(Severity.WARNING)
    f.fix = ("Take the card out if it is degraded; pin the training processes to\n"
             "their own cores (see `taskset`). Balance the data\nas well.\n")
    buf = io.StringIO()
    render_findings([f], out=Console(file=buf, width=300))
    assert "fix: Take the card out if it is degraded; pin the training processes to their own cores (see `taskset`).\n" in buf.getvalue()
    f.fix = "Fix what stopped that rank. Do not raise time-outs to paper over it.\nRaise them only for a slow host.\n"
    buf = io.StringIO()
    render_findings([f], out=Console(file=buf, width=300))  # the first line is whole sentences: kept as is
    assert "fix: Fix what stopped that rank. Do not raise time-outs to paper over it.\n" in buf.getvalue()
    buf = io.StringIO()
    render_findings([f], out=Console(file=buf, width=300), verbose=True)
    assert "Raise them only for a slow host" in buf.getvalue()  # -v: the whole fix
