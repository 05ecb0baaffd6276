"""NUM204: the loss curve of a log's progress lines, read for a finite divergence that no line calls an error."""

from __future__ import annotations

from pathlib import Path

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import run_checks
from msdoctor.facts.logs import collect
from msdoctor.facts.logstate import LOSS_POINTS
from tests.logs.conftest import paste_root_cause

ROOT = Path(__file__).resolve().parents[2]
GTMGC = ROOT / "tests/realworld/logs/hiascend-forum-0294147509412439006-gtmgc-transformers-trainer-torch-npu-2.1-loss-explodes-1e10-2024/paste.log"
LOG_CHECKS = load_catalogue().select(source="log", kind="check")


def _num204(*paths: str):
    facts, _ = collect(list(paths))
    return facts, [f for f in run_checks(LOG_CHECKS, facts).findings if f.rule == "NUM204"]


def _trainer_dicts(losses: list[float]) -> str:
    # the transformers Trainer's log dict as Trainer.log prints it (the form of the GTMGC case's lines)
    return "".join(f"{{'loss': {x}, 'grad_norm': 1.25, 'learning_rate': 2.5e-05, 'epoch': {i + 1}.0}}\n"
                   for i, x in enumerate(losses))


def test_a_trainer_paste_whose_loss_explodes_is_named_with_both_values(tmp_path):
    # the real paste: {'loss': 45.2135, …} at epoch 1, {'loss': 15700432316.3774, …} at epoch 2, nothing else
    rc = paste_root_cause(tmp_path, GTMGC.read_text(encoding="utf-8"))
    assert rc["rule"] == "NUM204"
    assert "45.21" in rc["message"] and "1.57e+10" in rc["message"] and rc["verdict"] == "first-error"


def test_a_noisy_or_doubling_curve_is_not_a_divergence(tmp_path):
    p = tmp_path / "paste.log"
    p.write_text(_trainer_dicts([2.31, 2.05, 4.6, 1.98, 9.0, 1.7, 0.4, 12.5]), encoding="utf-8")
    facts, hits = _num204(str(p))
    assert hits == []
    assert [x for _s, x, _l in facts["logs.launcher"]["losses"][0]["points"]] == [2.31, 2.05, 4.6, 1.98, 9.0, 1.7, 0.4, 12.5]


def test_a_loss_near_zero_that_rises_a_little_is_not_a_divergence(tmp_path):
    # an RL / contrastive loss that sits near zero: a hundredfold rise of less than min_rise is noise
    p = tmp_path / "paste.log"
    p.write_text(_trainer_dicts([0.001, 0.002, 0.0015, 0.4]), encoding="utf-8")
    assert _num204(str(p))[1] == []


def test_the_rank_and_step_of_a_loss_monitor_jump(tmp_path):
    for r, tail in ((0, 2.2), (1, 8123.5)):
        lines = [f"epoch: 1 step: {s}, loss is {x}" for s, x in ((1, 2.31), (2, 2.25), (3, 2.28), (4, tail))]
        (tmp_path / f"worker_{r}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, hits = _num204(str(tmp_path))
    assert [(h.rank, h.step) for h in hits] == [(1, 4)]
    assert "from 2.28 to 8124" in hits[0].message and "on rank 1" in hits[0].message


def test_a_megatron_iteration_line_feeds_the_curve(tmp_path):
    # Megatron-LM's training_log format (MindSpeed prints the same): the step is the iteration number
    row = (" iteration {i:8d}/    5000 | consumed samples:          {s} | elapsed time per iteration (ms): 12345.6 | "
           "learning rate: 1.250000E-07 | global batch size:    16 | lm loss: {x} | loss scale: 1.0 | grad norm: 3.2 |"
           " number of skipped iterations:   0 | number of nan iterations:   0 |")
    text = "\n".join(row.format(i=i, s=16 * i, x=x) for i, x in ((1, "1.140522E+01"), (2, "1.030511E+01"), (3, "2.481190E+04")))
    (tmp_path / "rank_3.log").write_text(text + "\n", encoding="utf-8")
    _, hits = _num204(str(tmp_path))
    assert [(h.rank, h.step) for h in hits] == [(3, 3)]


def test_a_long_curve_is_thinned_and_a_late_divergence_still_found(tmp_path):
    n = 3 * LOSS_POINTS + 17
    text = "".join(f"epoch: 1 step: {s}, loss is {2.0 + (s % 7) / 10 if s < n - 200 else 5e6}\n" for s in range(1, n + 1))
    (tmp_path / "worker_0.log").write_text(text, encoding="utf-8")
    facts, hits = _num204(str(tmp_path))
    points = facts["logs.ranks"]["0"]["losses"][0]["points"]
    assert len(points) < LOSS_POINTS and points[0][0] == 1
    assert len(hits) == 1 and hits[0].step is not None and hits[0].step >= n - 200
