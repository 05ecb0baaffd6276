"""A traceback's exception line whose name ends in no Error / Exception (`zipfile.BadZipFile: …`,
`concurrent.futures.process.BrokenProcessPool: …`, a bare `StopIteration`) is its exception line: before, such a
paste read as a traceback cut before its exception line ("paste the lines after the last frame"), although the
line was there. Elsewhere (no frames above it) the same shape is a logger's name or prose, not an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

FRAMES = """Traceback (most recent call last):
  File "/work/train.py", line 88, in <module>
    main()
  File "/opt/conda/lib/python3.10/zipfile.py", line 1336, in _RealGetContents
    raise BadZipFile("File is not a zip file")
"""


def _root(tmp_path: Path, text: str) -> dict:
    log = tmp_path / "paste.log"
    log.write_text(text)
    res = run_cli("logs", "--json", str(log))
    return json.loads(res.out)["root_cause"]


@pytest.mark.parametrize("line, exc_type", [
    ("zipfile.BadZipFile: File is not a zip file", "zipfile.BadZipFile"),
    ("concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly while the "
     "future was running or pending.", "concurrent.futures.process.BrokenProcessPool"),
    ("StopIteration", "StopIteration"),
])
def test_an_exception_line_of_any_name_closes_the_traceback(tmp_path: Path, line: str, exc_type: str) -> None:
    rc = _root(tmp_path, FRAMES + line + "\n")
    assert rc.get("verdict") != "incomplete-traceback", rc
    assert exc_type in json.dumps(rc), rc  # the line is quoted as the error read


def test_python_311_carets_between_frame_and_exception(tmp_path: Path) -> None:
    rc = _root(tmp_path, FRAMES + "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nzipfile.BadZipFile: File is not a zip file\n")
    assert rc.get("verdict") != "incomplete-traceback" and "zipfile.BadZipFile" in json.dumps(rc), rc


def test_the_shape_away_from_frames_is_no_error(tmp_path: Path) -> None:
    log = tmp_path / "paste.log"
    log.write_text("2024-05-01 10:00:00,123 - INFO - step 10 loss 0.31\nmodels.Resnet: loaded 50 layers\n"
                   "2024-05-01 10:00:05,123 - INFO - step 20 loss 0.29\n")
    res = run_cli("logs", "--json", str(log))
    assert res.rc == 0 and not json.loads(res.out)["findings"], res.out


def test_a_title_that_joined_frame_and_exception_reads_the_exception(tmp_path: Path) -> None:
    # an issue title (CMGAN#40, round 78 f) holds the frame, its source line and the exception line in one line:
    # before, it read as a traceback cut before its exception line
    title = next((Path(__file__).resolve().parent.parent / "realworld" / "holdout").glob("cmgan-40-*")) / "title.log"
    rc = _root(tmp_path, title.read_text(encoding="utf-8"))
    assert rc.get("verdict") != "incomplete-traceback" and rc.get("rule") == "COMM099", rc
