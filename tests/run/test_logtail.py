"""The live log tail of `msdoctor run`: where the logs are, and each new line through the catalogue.

Fixtures are real: ``shape_worker_1.log`` is rank 1's msrun log of tests/run/scripts/custom_loop.py
--fault shape (MindSpore 2.10 CPU), ``shape_console_excerpt.log`` lines of msrun's console of that job.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from msdoctor.watch.logtail import LogTail, log_dirs

FIX = Path(__file__).with_name("fixtures")


def test_log_dirs_from_the_command_a_script_or_msruns_default(tmp_path: Path) -> None:
    dirs, how = log_dirs(["msrun", "--worker_num=2", "--log_dir=out/logs", "train.py"], tmp_path, {})
    assert dirs == [tmp_path / "out" / "logs"] and "command line" in how[0]
    dirs, _ = log_dirs(["msrun", "--log_dir", "/abs/logs", "train.py"], tmp_path, {})
    assert dirs == [Path("/abs/logs")]
    (tmp_path / "run.sh").write_text("msrun --worker_num=8 --local_worker_num=8 --log_dir=msrun_log --join=True train.py\n")
    dirs, how = log_dirs(["bash", "run.sh"], tmp_path, {})
    assert dirs == [tmp_path / "msrun_log"] and "run.sh" in how[0]
    # msrun's --log_dir defaults to "": worker_<r>.log land in the working directory
    dirs, _ = log_dirs(["msrun", "--worker_num=2", "train.py"], tmp_path, {})
    assert dirs == [tmp_path]
    assert log_dirs(["python", "train.py"], tmp_path, {})[0] == []
    assert log_dirs(["python", "train.py"], tmp_path, {"GLOG_log_dir": "/var/log/ms"})[0] == [Path("/var/log/ms")]


SAMPLES_SHAPE = Path(__file__).resolve().parents[2] / "samples" / "logs" / "shape" / "logs"


def test_lines_are_matched_as_they_arrive_with_the_rank_of_the_file(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    real = (FIX / "shape_worker_1.log").read_bytes()
    cut = real.index(b"ValueError: For 'MatMul'")
    worker = logs / "worker_1.log"
    worker.write_bytes(real[:cut])
    tail = LogTail([logs], None, started=time.time() - 5)
    assert [f for f in tail.poll() if f.rule == "NUM096"] == []
    worker.write_bytes(real)  # the job wrote on
    par = [f for f in tail.poll() if f.rule == "NUM096"]
    assert len(par) == 1 and par[0].rank == 1 and par[0].count == 1
    assert par[0].evidence[0].file == str(worker) and "x1_col': 32" in par[0].evidence[0].text
    assert [f.count for f in tail.poll() if f.rule == "NUM096"] == [1]  # nothing new: not counted again
    # one rank's log alone is no cross-rank verdict (COMM502 needs two ranks)
    assert [f.rule for f in tail.correlate(force=True)] == []
    # both ranks of one real shape run (samples/logs/shape): `msdoctor logs`' verdict there, rank 0 failed first
    for name in ("worker_0.log", "worker_1.log"):
        (logs / name).write_bytes((SAMPLES_SHAPE / name).read_bytes())
    tail.poll()
    verdict = tail.correlate(force=True)
    assert [(f.rule, f.rank) for f in verdict] == [("COMM502", 0)]


def test_msruns_console_echo_is_not_counted_twice_and_old_logs_are_skipped(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    old = logs / "worker_0.log"
    old.write_bytes((FIX / "shape_worker_1.log").read_bytes())  # a previous job's log in the same directory
    past = time.time() - 3600
    os.utime(old, (past, past))
    (logs / "worker_1.log").write_bytes((FIX / "shape_worker_1.log").read_bytes())
    console = tmp_path / "console.log"
    console.write_bytes((FIX / "shape_console_excerpt.log").read_bytes())
    tail = LogTail([logs], console, started=time.time() - 5)
    found = {(f.rule, f.rank): f for f in tail.poll()}
    assert ("NUM096", 1) in found and ("NUM096", None) not in found and ("NUM096", 0) not in found
    assert ("COMM008", None) in found  # msrun's own line ("kill all other workers") is the launcher's
    assert tail.lines > 0


def test_a_one_process_jobs_console_is_rank_0(tmp_path: Path) -> None:
    console = tmp_path / "console.log"
    console.write_bytes((FIX / "shape_console_excerpt.log").read_bytes())
    found = {(f.rule, f.rank) for f in LogTail([], console, started=time.time(), console_rank=0).poll()}
    assert ("NUM096", 0) in found


def test_a_bare_status_line_in_a_running_job_is_no_failed_rank(tmp_path: Path) -> None:
    """`msdoctor logs` reads a quiet log's bare lines with failure words as errors (an issue's paste); the live
    tail does not: a healthy job prints such lines (made up here), and its correlation must name no failed rank."""
    logs = tmp_path / "logs"
    logs.mkdir()
    info = "[INFO] ME(1,ffff,python):2024-01-01-00:00:0{}.000.000 [train.py:1] step {} loss 2.3\n"
    (logs / "worker_0.log").write_text(info.format(0, 1) + "the frobnicator failed to start\n" + info.format(1, 2))
    (logs / "worker_1.log").write_text(info.format(0, 1))
    tail = LogTail([logs], None, started=0)
    tail.poll()
    assert tail.correlate(force=True) == []


def test_a_layout_named_in_a_tailed_file_keeps_the_sharding_rule(tmp_path: Path) -> None:
    # the live tail reports an operator's shape refusal as its twin (NUM096) until a file names a parallel layout
    # (msdoctor/facts/layout.py); then as the sharding rule, as `msdoctor logs` does. The layout line is Megatron's
    # own check (a real line, nemo/megatron threads of the corpus).
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "worker_1.log").write_bytes((FIX / "shape_worker_1.log").read_bytes())
    tail = LogTail([logs], None, started=time.time() - 5)
    assert {f.rule for f in tail.poll()} >= {"NUM096"}
    (logs / "worker_0.log").write_text(
        " 0: ValueError: num_attention_heads (15) must be a multiple of tensor_model_parallel_size (2).\n", encoding="utf-8")
    rules = {f.rule for f in tail.poll()}
    assert "PAR001" in rules and "NUM096" not in rules
