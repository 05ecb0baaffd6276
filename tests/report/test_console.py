"""Text output on a pipe is never hard-wrapped (as ruff and pytest do); COLUMNS sets the layout width."""

from __future__ import annotations

import io
import os

import pytest

from msdoctor.engine.model import Evidence, Finding, Severity
from msdoctor.report.render import PIPE_WIDTH, _TrimmedLines, console, console_width, render_findings
from tests.conftest import run_cli

LONG_PATH = "/data/job-20261201/" + "/".join(f"node{i:02d}" for i in range(12)) + "/log/worker_12.log"
LOG_LINE = "[ERROR] DISTRIBUTED(2871,ffff8c1f9120,python):2024-11-20-16:04:09.418.000 [mindspore/ccsrc/x.cc:93] Wait] Time out"


def _finding() -> Finding:
    return Finding(rule="COMM001", severity=Severity.ERROR, title="peer stopped",
                   message=f"rank 3 waited for rank 5; see {LONG_PATH}", cause="c", fix="fix rank 5", rank=3,
                   evidence=[Evidence(LOG_LINE, LONG_PATH, 4711)])  # fmt: skip


def test_piped_findings_keep_paths_and_log_lines_whole(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    render_findings([_finding()], out=console())  # capsys' stdout is not a terminal
    out = capsys.readouterr().out
    assert f"{LONG_PATH}:4711: {LOG_LINE}" in out
    assert f"see {LONG_PATH}" in out
    assert not any(line.endswith(" ") for line in out.splitlines())


def test_columns_is_honoured_but_evidence_stays_whole(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    assert console().width == 60
    render_findings([_finding()], out=console())
    assert f"{LONG_PATH}:4711: {LOG_LINE}" in capsys.readouterr().out


def test_width_rules() -> None:
    assert console_width({}, isatty=False) == PIPE_WIDTH
    assert console_width({}, isatty=True) is None  # rich measures the terminal
    assert console_width({"COLUMNS": "132"}, isatty=False) == 132
    assert console_width({"COLUMNS": "junk"}, isatty=False) == PIPE_WIDTH


def test_trimmed_lines_drop_padding_only_at_line_ends() -> None:
    buf = io.StringIO()
    t = _TrimmedLines(buf)
    t.write("a  b   ")
    t.write("   \nc ")
    t.write("d\n")
    assert buf.getvalue() == "a  b\nc d\n"


def test_piped_table_does_not_cut_a_long_path() -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    res = run_cli("rules", env=env)
    lines = res.out.splitlines()
    assert res.rc == 0 and max(len(x) for x in lines) > 100, "a 100+ column table row was cut or wrapped at 80"
    from msdoctor.engine.catalogue import load_catalogue

    longest = max((r for r in load_catalogue()), key=lambda r: len(r.title))
    assert any(line.rstrip().endswith(longest.title) for line in lines), "the longest title was cut"
