"""`msdoctor run --tui`: the supervisor runs beside the monitor (tui/launch.run_with_tui), and the
job's exit decides the command's; without a terminal it is a usage error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from msdoctor import cli


def test_tui_without_a_terminal_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["run", "--tui", "--run-dir", str(tmp_path / "run"), "--", sys.executable, "-c", "pass"])
    assert rc == 2 and "--tui needs a terminal" in capsys.readouterr().err


def test_tui_routes_the_supervisor_through_the_monitor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import msdoctor.tui.launch as launch

    calls: list[Path] = []

    def fake_run_with_tui(run_dir: Path, supervise):  # noqa: ANN001, ANN202 - records, then supervises as the thread would
        calls.append(run_dir)
        return supervise()

    monkeypatch.setattr(launch, "run_with_tui", fake_run_with_tui)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    run_dir = tmp_path / "run"
    rc = cli.main(["run", "--tui", "--no-inject", "--run-dir", str(run_dir), "--",
                   sys.executable, "-c", "import sys; sys.exit(3)"])
    assert calls == [run_dir]
    assert rc == 1  # the job failed (exit 3): the command says so, as without --tui
    assert (run_dir / "run.json").is_file()
