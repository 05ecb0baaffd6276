"""An internal error (a bug) is one line that says so, exit 3 (not 1, which means "error finding"); --debug
shows the traceback. A number too long for Python's int() in the input is the input's fault (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor import cli
from msdoctor.errors import ExitCode


def _boom(args) -> int:  # noqa: ANN001
    raise KeyError("planted")


def test_bug_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import msdoctor.commands.rules as rules

    monkeypatch.setattr(rules, "run", _boom)
    rc = cli.main(["rules"])
    err = capsys.readouterr().err
    assert rc == ExitCode.INTERNAL == 3
    assert err.count("\n") == 1 and "internal error" in err and "KeyError" in err and "--debug" in err
    assert "Traceback" not in err


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import msdoctor.commands.rules as rules

    monkeypatch.setattr(rules, "run", _boom)
    with pytest.raises(KeyError, match="planted"):
        cli.main(["rules", "--debug"])


def test_a_5000_digit_number_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = tmp_path / "launch.env"
    env.write_text(f"HCCL_CONNECT_TIMEOUT={'9' * 5000}\nHCCL_IF_BASE_PORT={'1' * 5000}\n")
    rc = cli.main(["preflight", "--env-file", str(env), "--json"])
    err = capsys.readouterr().err
    assert rc in (0, 1, 2) and "Traceback" not in err and "internal error" not in err
    if rc == 2:
        assert "number too long" in err and err.count("\n") == 1


def test_a_replayed_snapshot_missing_a_key_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by bench/bench_reliability.py: a ckpt.files record without its 'path' (a key the collector
    always writes) made the ckpt view raise KeyError."""
    import json

    fixtures = Path(__file__).resolve().parent / "rules" / "fixtures"
    snap = json.loads((fixtures / "CKPT601.fire.json").read_text())
    files = snap["facts"]["ckpt.files"]["value"]
    assert files and "path" in files[0]
    del files[0]["path"]
    f = tmp_path / "facts.json"
    f.write_text(json.dumps(snap))
    rc = cli.main(["ckpt", "--facts", str(f)])
    err = capsys.readouterr().err
    assert rc == 2 and "KeyError" in err and "--facts" in err and err.count("\n") == 1
