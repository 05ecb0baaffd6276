"""ENV329: a launcher's report that a worker died of SIGSEGV (msrun `Error code: -11`) heads the verdict only when no
specific rule of another area says what crashed; beside such a rule it yields, even when the launcher's line carries
the only time stamp of the paste."""

from __future__ import annotations

from tests.conftest import run_cli

# hyper-parallel #253 (real lines): the worker segfaults while garbage-collecting at exit, msrun reports -11
TEARDOWN = """\
======================= 1 passed, 30 warnings in 38.07s ========================
Fatal Python error: Segmentation fault
Current thread ...:
  Garbage-collecting
  <no Python frame>

Worker process 24341 exit with exception. Error code: -11.
RuntimeError: Distributed job exited with exception.
"""

# FlagGems #6500 (real faulthandler frames, NUM048: the Triton-Ascend compiler pass crashed) followed by msrun's
# time-stamped report of the worker's death (msrun's log-line format, COMM006's example, with the signal code)
COMPILER_CRASH = """\
Fatal Python error: Segmentation fault
Current thread (most recent call first):
  File ".../triton/backends/ascend/compiler.py", line 124 in ttir_to_linalg
  File ".../triton/backends/ascend/compiler.py", line 830 in <lambda>
  File ".../triton/backends/ascend/spec/triton/compiler/compiler.py", line 285 in compile
[ERROR] ME(5851:139772376857472,MainProcess):2026-11-29-19:42:07.349.000 [mindspore/parallel/cluster/process_entity/_api.py:365] Worker process 5862 exit with exception. Error code: -11.
"""


def _verdict(tmp_path, text):
    log = tmp_path / "job.log"
    log.write_text(text, encoding="utf-8")
    return run_cli("logs", "--json", str(log)).json()["root_cause"]


def test_msrun_sigsegv_exit_is_a_native_crash_not_a_worker_exit(tmp_path):
    rc = _verdict(tmp_path, TEARDOWN)
    assert rc["rule"] == "ENV329", rc


def test_launcher_signal_report_yields_to_the_rule_that_names_the_crash(tmp_path):
    rc = _verdict(tmp_path, COMPILER_CRASH)
    assert rc["rule"] == "NUM048", rc
