"""A full disk under the run directory never stops training and is itself reported (issue 16.6).

Before, the watchdog disabled itself without a trace, `train` printed no finding (it read findings back
from the file it could not write) and `report` later blamed the silent rank on "OOM or segfault".
"""

from __future__ import annotations

import errno
import os

import orjson

from msdoctor import rundir
from msdoctor.watch import watchdog as wdmod
from msdoctor.watch.report import diagnose_dir
from msdoctor.watch.watchdog import Watchdog


def fill_disk_for(monkeypatch, wd: Watchdog) -> None:
    """From now on the watchdog's writes fail with ENOSPC until its reserve is freed (as on a full disk,
    where deleting 64 KiB makes room for one more line)."""
    real = os.write

    def write(fd: int, data: bytes) -> int:
        if fd == wd._fd and rundir.reserve_file(wd.run_dir, wd.rank).exists():
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(wdmod.os, "write", write)


def make_run(run, monkeypatch, full: bool) -> None:
    wds = [Watchdog(run, r, world=2, heartbeat_s=60).start() for r in (0, 1)]
    for s in (1, 2, 3):
        for wd in wds:
            wd.step(s, loss=1.0, step_time=0.1)
    if full:
        fill_disk_for(monkeypatch, wds[1])
    for s in (4, 5):
        for wd in wds:
            wd.phase("forward", s)
            wd.step(s, loss=1.0, step_time=0.1)  # training goes on: the watchdog never raises
    for wd in wds:
        wd.close()
    monkeypatch.undo()


def test_a_full_disk_is_recorded_and_reported_not_called_a_hang_or_a_crash(tmp_path, monkeypatch):
    make_run(tmp_path, monkeypatch, full=True)
    evs = [orjson.loads(x) for x in rundir.rank_file(tmp_path, 1).read_bytes().splitlines() if x.strip()]
    marker = [e for e in evs if e.get("disk_full")]
    assert len(marker) == 1 and "No space left" in marker[0]["error"] and marker[0]["step"] == 3
    assert evs[-1] is marker[-1] or evs[-1].get("disk_full")  # nothing after it: the watchdog stopped
    assert not rundir.reserve_file(tmp_path, 1).exists() and not rundir.reserve_file(tmp_path, 0).exists()
    diag = diagnose_dir(tmp_path)
    assert [(f.rule, f.rank) for f in diag.findings] == [("ENV201", 1)]
    assert (diag.root_cause.rule, diag.root_cause.rank) == ("ENV201", 1)
    assert "disk under the run directory is full" in diag.findings[0].message


def test_no_full_disk_no_finding(tmp_path, monkeypatch):
    make_run(tmp_path, monkeypatch, full=False)
    assert [f.rule for f in diagnose_dir(tmp_path).findings] == []


def test_train_shows_the_verdict_even_when_findings_jsonl_was_never_written(finished_run):
    # Before: `msdoctor train` read its findings back from findings.jsonl only — none on a full disk.
    from msdoctor.commands.train import _findings

    run = finished_run("nan")
    assert not (run / rundir.FINDINGS_FILE).exists()
    assert [(f.rule, f.rank) for f in _findings(run)] == [("NUM201", 1)]
