"""The monitor in a real terminal (tmux) against a live 2-rank hang run of the bundled trainer.

``msdoctor train --workers 2 --inject hang:rank=1,step=4 --stop-on-hang`` runs in the background;
``msdoctor monitor RUN`` runs in a detached tmux pane of 160x45 with 256 colours. The test reads
the pane as the user sees it: the culprit's row marked and drawn on red, then Tab, Enter opens the
COMM201 finding with rank 1's stack dump.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

MSDOCTOR = [sys.executable, "-m", "msdoctor"]
CULPRIT_BG = "48;5;124"  # widgets.STYLE_CULPRIT's background in a 256-colour terminal


def _tmux(sock: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, timeout=30).stdout


def _wait_pane(sock: str, cond, timeout: float, escapes: bool = False) -> str:
    deadline = time.monotonic() + timeout
    pane = ""
    while time.monotonic() < deadline:
        pane = _tmux(sock, "capture-pane", "-p", *(["-e"] if escapes else []), "-t", "mon")
        if cond(pane):
            return pane
        time.sleep(0.5)
    raise AssertionError(f"the pane never showed it; last screen:\n{pane}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed (.ci/run installs it)")
def test_live_hang_in_a_real_terminal(tmp_path):
    run_dir = tmp_path / "run"
    env = dict(os.environ, TERM="xterm-256color")
    env.pop("COLORTERM", None)  # 256 colours, not truecolor
    train = subprocess.Popen(
        [*MSDOCTOR, "train", "--workers", "2", "--steps", "8", "--inject", "hang:rank=1,step=4", "--stop-on-hang",
         "--run-dir", str(run_dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    sock = f"msdoctor-test-{uuid.uuid4().hex[:8]}"
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / "events").is_dir() and time.monotonic() < deadline:
            time.sleep(0.2)
        cmd = " ".join([*MSDOCTOR, "monitor", str(run_dir)])
        # the pane gets its size first, the app is started in it after: an app started while tmux
        # still resizes a new window can read 80x24 and miss the change
        _tmux(sock, "-f", "/dev/null", "new-session", "-d", "-s", "mon", "-x", "160", "-y", "45", "sleep 900")
        _tmux(sock, "respawn-pane", "-k", "-t", "mon", "-e", "TERM=xterm-256color", "-e", f"PATH={env['PATH']}",
              f"cd {Path.cwd()} && env -u COLUMNS -u LINES {cmd}; sleep 600")  # Textual obeys COLUMNS/LINES
        pane = _wait_pane(sock, lambda p: "culprit: rank 1 (COMM201)" in p, timeout=300)
        lines = pane.splitlines()
        row = next(i for i, s in enumerate(lines) if s.startswith("✗") and s.split()[1] == "1")
        colour = _tmux(sock, "capture-pane", "-p", "-e", "-t", "mon").splitlines()
        assert CULPRIT_BG in colour[row] and CULPRIT_BG not in colour[row - 1]
        # the stack comes once the supervisor's SIGUSR1 made rank 1 dump it; the finding says so
        _wait_pane(sock, lambda p: "COMM201" in p and "rank 1 hung at step 4" in p, timeout=120)
        deadline = time.monotonic() + 120
        while not (run_dir / "events" / "rank_1.stack.txt").stat().st_size if (
                run_dir / "events" / "rank_1.stack.txt").exists() else True:
            assert time.monotonic() < deadline, "rank 1 never dumped its stack"
            time.sleep(0.5)
        _tmux(sock, "send-keys", "-t", "mon", "Tab")
        time.sleep(0.5)
        _tmux(sock, "send-keys", "-t", "mon", "Enter")
        pane = _wait_pane(sock, lambda p: "Stack of rank 1" in p, timeout=30)
        assert "COMM201 error  rank 1  step 4" in pane, pane
        assert 'trainer/train.py", line' in pane and "in train" in pane, pane
        _tmux(sock, "send-keys", "-t", "mon", "Escape")
        _wait_pane(sock, lambda p: "culprit: rank 1" in p and "Stack of rank 1" not in p, timeout=30)
        _tmux(sock, "send-keys", "-t", "mon", "q")
    finally:
        _tmux(sock, "kill-server")
        try:
            train.wait(timeout=180)
        except subprocess.TimeoutExpired:
            train.send_signal(signal.SIGINT)  # train's own cleanup ends msrun and the ranks
            train.wait(timeout=60)
