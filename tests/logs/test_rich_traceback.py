"""rich's tracebacks (a box of `│` lines: `╭──── Traceback (most recent call last) ────╮`, frames `│ /x/train.py:746 in
<module> │`) are tracebacks: a paste cut inside the box is an incomplete traceback with its frames (before: "none holds
a line of a known log grammar", exit 2, as for unreadable input), and the frames of one that ends in its exception
give the frame hint as a plain traceback's do."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent / "realworld"
# a real paste cut inside the box (bmaltais/kohya_ss#1558, kept as a holdout): the SDXL trainer's frames
KOHYA = next((ROOT / "holdout").glob("kohya-ss-gui-1558-*")) / "paste.log"


def _run(path: Path) -> tuple[int, dict]:
    res = run_cli("logs", "--json", str(path))
    return res.rc, json.loads(res.out)


def test_a_rich_traceback_cut_inside_its_box_is_an_incomplete_traceback(tmp_path: Path) -> None:
    rc, out = _run(KOHYA)
    rc_ = out["root_cause"]
    assert rc == 1 and rc_["verdict"] == "incomplete-traceback", rc_
    assert rc_["frames"] == ["E:\\kohya_ss-21.8.9\\sdxl_train.py", "E:\\kohya_ss-21.8.9\\sdxl_train.py"], rc_
    assert "at line 12" in rc_["reason"]  # the last frame line read


def test_a_rich_traceback_with_its_exception_line_heads_with_its_frames(tmp_path: Path) -> None:
    # the paste's box, closed, then the exception line the thread's title quotes (the case's title.log)
    log = tmp_path / "paste.log"
    lines = KOHYA.read_text(encoding="utf-8").splitlines()
    log.write_text("\n".join([*lines, "╰" + "─" * 98 + "╯", "AssertionError: resolution is required / resolution（解像度）指定は必須です", ""]),
                   encoding="utf-8")
    rc, out = _run(log)
    assert rc == 1 and out["root_cause"].get("verdict") != "incomplete-traceback", out["root_cause"]
    assert "resolution is required" in json.dumps(out["root_cause"], ensure_ascii=False)


def test_a_box_line_outside_a_traceback_is_no_frame(tmp_path: Path) -> None:
    log = tmp_path / "paste.log"
    log.write_text("2024-05-01 10:00:00,123 - INFO - config\n│ /x/train.py:12 in main   │\n"
                   "2024-05-01 10:00:05,123 - INFO - step 20 loss 0.29\n", encoding="utf-8")
    rc, out = _run(log)
    assert rc == 0 and not out["findings"], out
