"""Issue 16 item 4: a pathological line or a gzip bomb costs bounded memory and says what was cut.

Each test asserts what is reported (the cut line, the cap, the findings that survive), never time.
"""

from __future__ import annotations

import gzip
import io
import shutil
from pathlib import Path

import pytest

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import signature_set
from msdoctor.facts import loggrep, logscan
from msdoctor.facts.logscan import ScanSpec, scan_file

OOM = b"[ERROR] DEVICE(1,7f,python):2024-05-01-10:00:01.000.000 [mindspore/ccsrc/a.cc:1] Malloc] Out of Memory!!! total size\n"
ML = b"[INFO] ME(1,7f,python):2024-05-01-10:00:00.000.000 [mindspore/train/callback.py:1] step_end] epoch: 1 step: 1, loss is 2.1\n"


@pytest.fixture(scope="module")
def spec() -> ScanSpec:
    return ScanSpec(signature_set(load_catalogue()), engine="python")


def _reasons(out: dict) -> list[str]:
    return [str(s.get("reason")) for s in out["skipped"]]


def test_a_line_over_the_cap_is_cut_and_counted(tmp_path: Path, spec: ScanSpec) -> None:
    log = tmp_path / "worker_0.log"
    long = 3 * logscan.MAX_LINE + 12345
    log.write_bytes(ML + b"y" * long + b"\n" + OOM)
    out = scan_file(str(log), spec)
    cut = [r for r in _reasons(out) if "longer than" in r]
    assert cut == [f"1 line(s) longer than 1 MiB: only their first 1 MiB scanned ({long - logscan.MAX_LINE} bytes cut)"]
    assert out["lines"] == 3  # the long line counts once; the line after it is read
    assert any(e.get("line") == 3 for e in out["first_events"])  # the OOM line after it is read


def test_a_file_ending_inside_a_long_line_is_reported_unterminated(tmp_path: Path, spec: ScanSpec) -> None:
    log = tmp_path / "worker_0.log"
    log.write_bytes(ML + b"z" * (2 * logscan.MAX_LINE + 7))
    reasons = _reasons(scan_file(str(log), spec))
    assert any("longer than 1 MiB" in r for r in reasons)
    assert any("no newline" in r for r in reasons)


def test_a_gzip_bomb_stops_at_the_decompressed_cap(tmp_path: Path, spec: ScanSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logscan, "MAX_DECOMPRESSED", 4 << 20)
    bomb = tmp_path / "worker_0.log.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(ML)
        for _ in range(16):
            f.write(b"q" * (1 << 20))  # one 16 MiB line, ~16 KB compressed
    out = scan_file(str(bomb), spec)
    reasons = _reasons(out)
    assert any("decompressed size passed the cap of 4 MiB" in r for r in reasons), reasons
    assert any("longer than 1 MiB" in r for r in reasons)
    assert not any("no newline" in r for r in reasons)  # cut by us, not truncated by the writer


def test_grep_output_lines_are_read_in_bounded_pieces() -> None:
    big = b"a" * (3 * loggrep.MAX_OUT_LINE) + b"\nnext\n"
    lines = list(loggrep._lines(io.BytesIO(big)))
    assert [len(x) for x in lines] == [loggrep.MAX_OUT_LINE + 1, 5]
    assert lines[1] == b"next\n"


@pytest.mark.skipif(shutil.which("grep") is None, reason="needs GNU grep")
def test_grep_out_of_memory_falls_back_to_the_bounded_python_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loggrep, "GREP_MAX_AS", 1 << 20)  # grep cannot even start: as if a line were too long
    log = tmp_path / "worker_0.log"
    log.write_bytes(ML + b"w" * (2 * logscan.MAX_LINE) + b"\n" + OOM)
    spec = ScanSpec(signature_set(load_catalogue()), engine="auto", grep_min_size=0)
    out = scan_file(str(log), spec)
    assert str(out.get("engine", "")).startswith("python (grep failed")
    assert any("longer than 1 MiB" in r for r in _reasons(out))
    assert out["lines"] == 3
