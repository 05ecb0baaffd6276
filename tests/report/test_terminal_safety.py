"""No control character taken from input reaches the user's terminal (text view, JSON, error lines)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

HOSTILE = (b"epoch: 1 step: 2, loss is 3.1\n"
           b"[ERROR] \x1b]0;pwned\x07\x1b[2J RuntimeError: For 'MatMul', the input dimensions must be equal, "
           b"but got 16 and 8 [/x] [link=http://x]y \xc2\x9b31m \xe2\x80\xae\n")
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def _log(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    (d / "worker_0.log").write_bytes(HOSTILE)
    return d


def test_text_view_shows_controls_escaped(tmp_path: Path) -> None:
    res = run_cli("logs", str(_log(tmp_path)))
    assert res.rc in (0, 1), res.err
    # the OSC title-set is shown escaped; the CSI clear-screen is removed with the colour codes
    assert "\\x1b]0;pwned\\x07" in res.out
    assert not any(c in res.out for c in RAW), [c for c in RAW if c in res.out]


def test_json_human_fields_carry_no_raw_control(tmp_path: Path) -> None:
    res = run_cli("logs", "--json", str(_log(tmp_path)))
    assert not any(c in res.out for c in RAW)
    text = json.dumps(json.loads(res.out))
    assert "pwned" in text and "\\\\x9b" in text  # C1 CSI shown escaped, not passed raw


def test_error_line_escapes_a_hostile_path(tmp_path: Path) -> None:
    res = run_cli("logs", str(tmp_path / "no\x1b[2Jsuch"))
    assert res.rc == 2
    assert "\x1b" not in res.err and "\\x1b[2J" in res.err
