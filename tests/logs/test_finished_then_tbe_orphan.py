"""ENV979 (engine check logs.finished_then_tbe_orphan): CANN's TBE `main process disappeared` lines printed AFTER the
training driver's final result (verl's `Final validation metrics`, ENV978) are the exit-time noise of a finished job,
not a kill (MEM016 yields to ENV979); before the result, or with no result line, they stay MEM016's."""

from __future__ import annotations

from tests.logs.conftest import paste_report

TBE = "(WorkerDict pid=1896673) [ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!\n"

# verl #2012 (real lines): the final validation metrics, then the WorkerDict's TBE lines
FINISHED = ("(\"Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': \"\n"
            "'0.3661865049279757}')\n\n" + TBE * 4)

# the same TBE lines in a run that never reached its end (no final result): a kill
KILLED = "(TaskRunner pid=668486) step:58 - global_seqlen/min:15082 - global_seqlen/max:17090\n" + TBE * 2

# the TBE lines come first, the result mark long after them in another part of the paste: not read together
BEFORE = TBE + "\n" + "(\"Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': \"\n"


def test_tbe_after_final_result_is_exit_noise(tmp_path):
    out = paste_report(tmp_path, FINISHED)
    assert out["root_cause"]["rule"] == "ENV979"
    assert "ray.shutdown" in out["root_cause"]["message"] or "shut Ray" in out["root_cause"]["message"]


def test_tbe_without_final_result_stays_a_kill(tmp_path):
    assert paste_report(tmp_path, KILLED)["root_cause"]["rule"] == "MEM016"


def test_tbe_before_the_result_is_not_read_as_exit(tmp_path):
    out = paste_report(tmp_path, BEFORE)
    assert out["root_cause"]["rule"] == "MEM016"
    assert not any(f["rule"] == "ENV979" for f in out.get("findings") or [])
