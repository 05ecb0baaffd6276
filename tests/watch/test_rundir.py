"""msdoctor.rundir: the one reader of a run directory — regular files only, never blocks, says what it lost."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from msdoctor import rundir
from tests.conftest import run_cli


def _ev(**kw) -> bytes:
    return orjson.dumps({"t": 1.0, "rank": 0, **kw}) + b"\n"


def _run_with_rank0(tmp_path):
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    (run / "events" / "rank_0.jsonl").write_bytes(_ev(kind="start", world=2) + _ev(kind="step", step=1, loss=1.0))
    return run


@pytest.mark.parametrize("what", ["fifo", "dir", "loop"])
@pytest.mark.parametrize("where", ["events/rank_1.jsonl", "findings.jsonl", "supervisor.json"])
def test_special_files_are_skipped_with_a_reason_never_block(tmp_path, what, where):
    run = _run_with_rank0(tmp_path)
    path = run / where
    if what == "fifo":
        os.mkfifo(path)
    elif what == "dir":
        path.mkdir()
    else:
        os.symlink(path.name + ".loop", path)
        os.symlink(path.name, path.with_name(path.name + ".loop"))
    for cmd in ("report", "watch"):
        r = run_cli(cmd, str(run), "--json", timeout=60)  # a FIFO opened for reading would block here
        assert r.rc in (0, 1), (cmd, r.err)
        assert "Traceback" not in r.err
        skipped = r.json()["skipped"]
        assert any(str(path) in s and ("not a file" in s or "loop" in s) for s in skipped), skipped


def test_tail_reads_complete_lines_and_describes_a_cut_one(tmp_path):
    p = tmp_path / "rank_0.jsonl"
    p.write_bytes(_ev(kind="step", step=1) + b'{"t": 2.0, "rank": 0, "kind": "step", "step": 2, "lo')
    tail = rundir.Tail(p)
    assert [e["step"] for e in tail.read()] == [1]
    rest, held = tail.pending()
    assert rest > 0 and held == "a step event of step 2"
    with open(p, "ab") as fh:
        fh.write(b'ss": 1.0}\n')
    assert [e["step"] for e in tail.read()] == [2] and tail.pending() == (0, None)


def test_tail_notes_a_file_that_shrank_and_skips_over_long_lines(tmp_path, monkeypatch):
    p = tmp_path / "rank_0.jsonl"
    p.write_bytes(_ev(kind="step", step=1) + _ev(kind="step", step=2))
    tail = rundir.Tail(p)
    assert len(tail.read()) == 2
    p.write_bytes(_ev(kind="step", step=9))
    assert [e["step"] for e in tail.read()] == [9]
    assert any("shrank" in x for x in tail.lost)
    monkeypatch.setattr(rundir, "MAX_LINE", 100)
    with open(p, "ab") as fh:
        fh.write(b'{"kind": "checksum", "step": 3, "sums": "' + b"x" * 500 + b'"}\n' + _ev(kind="step", step=10))
    assert [e["step"] for e in tail.read()] == [10]
    assert tail.skipped == 1 and "unreadable line: a checksum event of step 3" in tail.lost


def test_fold_findings_latest_per_rule_and_rank_retractions_applied(tmp_path):
    f = tmp_path / rundir.FINDINGS_FILE
    lines = [
        {"rule": "NUM201", "severity": "error", "rank": 0, "message": "first"},
        {"rule": "NUM201", "severity": "error", "rank": 0, "message": "first", "retracted": True},
        {"rule": "NUM201", "severity": "error", "rank": 1, "message": "v1"},
        {"rule": "NUM201", "severity": "error", "rank": 1, "message": "v2"},
        {"rule": "X", "severity": "fatal", "rank": 1},
        {"rule": "X", "severity": "error", "rank": [1]},
    ]
    f.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines) + b"garbage\n")
    fold = rundir.fold_findings(tmp_path)
    assert {k: v["message"] for k, v in fold.latest.items()} == {("NUM201", 1): "v2"}
    assert fold.skipped == 3


def test_rundir_imports_no_mindspore_and_no_msdoctor_layer_above():
    code = ("import sys; import msdoctor.rundir; "
            "bad = [m for m in sys.modules if m == 'mindspore' or (m.startswith('msdoctor.') and m != 'msdoctor.rundir')]; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_writers_never_block_on_a_fifo_or_write_through_a_symlink(tmp_path, capsys):
    from msdoctor.engine.model import Finding, Severity
    from msdoctor.watch.supervisor import SuperviseOptions, Supervisor, _take_lock
    from msdoctor.watch.watchdog import Watchdog

    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    os.mkfifo(rundir.rank_file(run, 0))  # opening a FIFO for writing would wait for a reader forever
    wd = Watchdog(run, 0, heartbeat_s=60).start()
    wd.step(1, loss=1.0)  # training goes on
    wd.close()
    assert not wd.enabled and "disabled" in capsys.readouterr().err  # ENXIO: refused, not waited on

    os.mkfifo(run / rundir.FINDINGS_FILE)
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    os.symlink(target, run / rundir.SUPERVISOR_FILE)
    sup = Supervisor(run, SuperviseOptions())
    f = Finding(rule="NUM201", severity=Severity.ERROR, title="t", message="m", cause="c", fix="f", rank=0)
    sup._record(("NUM201", 0), f, 1.0, force=True)
    assert sup.write_error and "findings.jsonl" in sup.write_error  # refused (ENXIO), not waited on
    sup.flush()
    assert target.read_text() == "{}"  # replaced as a name, not written through
    os.mkfifo(run / rundir.LOCK_FILE)
    assert _take_lock(run) is None


def test_layers_point_down():
    # the closing report never builds a supervisor; facts, checks and the TUI state read the run
    # directory through rundir, not through watch (which also runs inside the ranks)
    code = (
        "import sys\n"
        "import msdoctor.watch.report\n"
        "assert 'msdoctor.watch.supervisor' not in sys.modules, 'report imports the supervisor'\n"
        "import msdoctor.facts.run, msdoctor.checks.run_hang, msdoctor.checks.run_faults, msdoctor.checks.run_numerics\n"
        "import msdoctor.checks.run_replicas, msdoctor.checks.run_throughput, msdoctor.tui.state\n"
        "for m in ('msdoctor.facts.run', 'msdoctor.checks.run_common', 'msdoctor.tui.state', 'msdoctor.watch.diagnosis'):\n"
        "    src = open(sys.modules[m].__file__).read()\n"
        "    assert 'from msdoctor.watch import' not in src and 'msdoctor.watch.watchdog' not in src, m\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_report_states_what_it_read(tmp_path):
    run = _run_with_rank0(tmp_path)
    with open(run / "events" / "rank_0.jsonl", "ab") as fh:
        fh.write(b"not json\n" + b'{"t": 3.0, "rank": 0, "kind": "step", "step": 2, "lo')
    r = run_cli("report", str(run), "--json")
    cov = r.json()["coverage"]
    assert (cov["events"], cov["event_files"], cov["unreadable_lines"]) == (2, 1, 1)
    assert cov["bytes_cut"] == len(b'{"t": 3.0, "rank": 0, "kind": "step", "step": 2, "lo')
    text = run_cli("report", str(run)).out
    assert "read: 2 event(s) from 1 event file(s), 1 unreadable line(s)" in text
