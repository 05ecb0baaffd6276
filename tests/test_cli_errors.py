"""Bad input and hostile terminals, command by command, as a new user meets them.

Contract (docs/architecture.md): unreadable input is one line on stderr and exit 2, never a traceback
and never a silent exit 0; ``--json`` is exactly one JSON object on stdout; a stdout that cannot encode
the report's characters still gets the whole report.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from msdoctor.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
FIXTURES = ROOT / "tests" / "rules" / "fixtures"


@pytest.fixture()
def bad(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "empty").mkdir()
    (tmp_path / "garbage").write_bytes(bytes(range(256)) * 16)
    (tmp_path / "trunc.json").write_text('{"a": [1, 2')
    (tmp_path / "run" / "events").mkdir(parents=True)
    (tmp_path / "run" / "events" / "rank_0.jsonl").write_text('{"t": 1, "rank": 0, "kind": "start"}\n')
    return {"missing": tmp_path / "missing", "empty": tmp_path / "empty", "run": tmp_path / "run",
            "garbage": tmp_path / "garbage", "trunc": tmp_path / "trunc.json"}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_exit_2(rc: int, out: str, err: str, *why: str) -> None:
    assert rc == 2, (rc, out, err)
    assert out == "", out
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in why:
        assert w in err, err


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (("logs", "{missing}"), "no such file"),
        (("logs", "{empty}"), "no log files"),
        (("logs", "{garbage}"), "binary"),
        (("logs", str(SAMPLES / "profiles" / "gen_8rank")), "no log files"),
        (("analyze", "{missing}"), "no such directory"),
        (("analyze", "{empty}"), "no MindSpore profiler output"),
        (("analyze", "{garbage}"), "not a directory"),
        (("analyze", str(SAMPLES / "logs" / "hang")), "no MindSpore profiler output"),
        (("analyze", "--facts", "{trunc}"), "not valid JSON"),
        (("analyze", "--facts", "{garbage}"), "not valid JSON"),
        (("ckpt", "{missing}"), "no such file"),
        (("ckpt", "{empty}"), "no .ckpt or .safetensors"),
        (("ckpt", "--facts", "{trunc}"), "not valid JSON"),
        (("report", "{missing}"), "no such run directory"),
        (("report", "{empty}"), "no event files"),
        (("report", str(SAMPLES / "logs" / "hang")), "no event files"),
        (("watch", "{garbage}"), "not a directory"),
        (("preflight", "--rank-table", "{missing}"), "no such rank table"),
        (("preflight", "--env-file", "{garbage}"), "binary"),
        (("preflight", "--facts", "{trunc}"), "not valid JSON"),
        (("logs", "--facts", "{garbage}"), "not valid JSON"),
        (("explain", "nope"), "no rule 'nope'"),
        (("rules", "--area", "XYZ"), "unknown area"),
        (("rules", "--source", "XYZ"), "unknown source"),
        (("logs", "--facts", "{garbage}/x.json"), "cannot read"),
        # writing: an output path that cannot be written is one line too, not a traceback after the scan
        (("logs", str(SAMPLES / "logs" / "hang"), "--dump-facts", "{missing}/f.json"), "--dump-facts"),
        (("analyze", str(SAMPLES / "profiles" / "cpu_2rank"), "--dump-facts", "{missing}/f.json"), "cannot write"),
        (("analyze", str(SAMPLES / "profiles" / "cpu_2rank"), "--merge-trace", "{missing}/t.json"), "--merge-trace"),
        (("ckpt", "--facts", str(FIXTURES / "CKPT601.fire.json"), "--dump-facts", "{missing}/f.json"), "cannot write"),
        (("analyze", str(SAMPLES / "profiles" / "cpu_2rank"), "--top", "-1"), "--top"),
        # another command's snapshot: nothing the rules read, so not "no findings" and exit 0
        (("analyze", "--facts", str(FIXTURES / "COMM501.fire.json")), "no profile.* facts"),
        (("logs", "--facts", str(FIXTURES / "PERF301.fire.json")), "no logs.* facts"),
        (("ckpt", "--facts", str(FIXTURES / "COMM201.fire.json")), "no ckpt.* facts"),
        (("preflight", "--facts", str(FIXTURES / "CKPT601.fire.json")), "no host.*"),
        (("preflight", "--compare", str(FIXTURES / "ENV101.fire.json"), str(FIXTURES / "PERF301.fire.json")), "PERF301"),
        (("monitor", "{missing}"), "no such run directory"),
        (("monitor", "{garbage}"), "not a directory"),
        (("monitor", "{empty}"), "no events/"),
        (("monitor", "{run}", "--poll", "0"), "--poll"),
        # under pytest stdout is captured, as in `msdoctor monitor RUN > file`: Textual would stream escapes
        (("monitor", "{run}"), "not a terminal"),
    ],
)
def test_unreadable_input_is_one_line_exit_2(capsys, bad, argv, why):
    args = [a.format(**{k: str(v) for k, v in bad.items()}) for a in argv]
    rc, out, err = _run(capsys, *args)
    _one_line_exit_2(rc, out, err, f"msdoctor {args[0]}:", why)


def test_source_filter_is_case_insensitive_like_area(capsys):
    rc, out, _ = _run(capsys, "rules", "--source", "PROFILE", "--json")
    assert rc == 0
    rules = json.loads(out)["rules"]
    assert rules and {r["source"] for r in rules} == {"profile"}


def test_no_arguments_prints_usage_on_stderr_exit_2(capsys):
    rc, out, err = _run(capsys)
    assert rc == 2 and out == "" and "usage: msdoctor" in err


@pytest.mark.parametrize(
    ("argv", "rc"),
    [
        (("analyze", "--facts", str(FIXTURES / "PERF301.fire.json")), 0),
        (("logs", "--facts", str(FIXTURES / "COMM501.fire.json")), 1),
        (("ckpt", "--facts", str(FIXTURES / "CKPT601.fire.json")), 1),
        (("preflight", "--facts", str(FIXTURES / "ENV101.fire.json")), 1),
        (("logs", str(SAMPLES / "logs" / "hang")), 1),
        (("analyze", str(SAMPLES / "profiles" / "gen_8rank")), 0),
        (("preflight", "--root", str(SAMPLES / "roots" / "cann-8.0rc2"),
          "--env-file", str(SAMPLES / "roots" / "envs" / "bad-hccl.env")), 1),
        (("rules",), 0),
        (("explain", "PAR001"), 0),
    ],
)
def test_json_is_one_object_on_stdout(capsys, argv, rc):
    got, out, _ = _run(capsys, *argv, "--json")
    assert got == rc
    payload = json.loads(out)  # raises on anything but exactly one JSON document
    assert isinstance(payload, dict)


@pytest.mark.parametrize(
    ("argv", "rc", "expect"),
    [
        (("logs", str(SAMPLES / "logs" / "hang")), 1, "COMM501"),
        (("analyze", str(SAMPLES / "profiles" / "gen_8rank")), 0, "COMM301"),
        (("rules",), 0, "PAR001"),
        (("explain", "PAR001"), 0, "PAR001"),
    ],
)
def test_report_survives_a_latin1_stdout(monkeypatch, argv, rc, expect):
    """PYTHONIOENCODING=latin-1 (or a C locale): '—', '→', '…' cannot be encoded; before the CLI
    relaxed the stream's error handler every command but preflight died with UnicodeEncodeError."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="latin-1", errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", stream)
    got = main(list(argv))
    stream.flush()
    text = raw.getvalue().decode("latin-1")
    assert got == rc
    assert expect in text and "?" in text
