"""Issue 16 item 6: SIGKILL at random moments of the bundled trainer's checkpoint saves (20 times)
always leaves the latest complete checkpoint loadable by ``--resume``, and the temp files of killed
saves are removed, never loaded. The kills and resumes run in ``ckpt_kill.py`` (MindSpore imported
once, one forked saver per kill) through the trainer's own ``Trainer._save`` and ``Trainer._resume``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from msdoctor_trainer import ckpt

HERE = Path(__file__).parent


def test_sigkill_during_saves_always_leaves_the_latest_complete_checkpoint(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(HERE / "ckpt_kill.py"), str(tmp_path), "20", "16"],
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(trials) == 20
    for t in trials:
        # The kill may land after the rename but before the child announced the save: then the
        # resume point is that newer, complete file. Never an older one, never a partial one.
        assert t["resumed"] in (t["last_announced"], t["last_announced"] + 1), t
        assert t["values"] == [float(t["resumed"])], t  # every tensor holds what that step wrote
        assert t["tmp_after_resume"] == [], t  # the killed save's temp file is gone
    mid_write = [t for t in trials if t["tmp_after_kill"]]
    assert mid_write, "no kill landed while a file was being written: the test proved nothing"
    assert all(name.startswith(".tmp-") for t in mid_write for name in t["tmp_after_kill"])


def test_stale_temp_files_are_removed_only_when_their_saver_is_gone(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # exited and reaped: no process has this pid now (short of reuse)
    live_pid = os.getppid()
    d = tmp_path / "rank_0"
    d.mkdir()
    names = {
        f".tmp-{dead_pid}-step_000004.ckpt": False,  # our temp name, saver gone
        f".tmp-{dead_pid}-step_000004.tmp": False,  # MindSpore's own temp inside it, saver gone
        f".tmp-{live_pid}-step_000005.ckpt": True,  # another process still saving: left alone
        "step_000003.ckpt": True,
        "notes.txt": True,
    }
    for name in names:
        (d / name).write_bytes(b"x")
    removed = ckpt.clean_stale_tmp(d)
    assert sorted(p.name for p in removed) == sorted(n for n, keep in names.items() if not keep)
    assert sorted(os.listdir(d)) == sorted(n for n, keep in names.items() if keep)
    # A save cleans up before it writes: the next checkpoint leaves no dead saver's temp behind.
    (d / f".tmp-{dead_pid}-step_000004.tmp").write_bytes(b"partial")
    ckpt.save_atomic(lambda p: Path(p).write_bytes(b"ok"), tmp_path, 0, 6, keep=5)
    assert not (d / f".tmp-{dead_pid}-step_000004.tmp").exists()
    assert ckpt.latest(d) == (6, d / "step_000006.ckpt")
