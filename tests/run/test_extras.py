"""The supervisor hook of `msdoctor run`: the rank that crashed is told by its faulthandler fatal dump.

``crash_rank1.stack.txt`` is rank 1's real dump from ``bash run.sh`` → msrun → tests/run/scripts/custom_loop.py
--fault crash (a segfault at step 4): both ranks had fetched batch 4 in the same millisecond, so the events
alone could name either as the rank that vanished first.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from msdoctor.commands.run import Extras
from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import finding_from_hit
from msdoctor.engine.model import Evidence, Hit

FIX = Path(__file__).with_name("fixtures")


class _NoTail:
    lines = 0

    def poll(self) -> list:
        return []

    def correlate(self, force: bool = False) -> list:
        return []


def _sup(run: Path) -> SimpleNamespace:
    ranks = {"0": {"pid": 100, "last_step": 3, "phase": "step", "last_seen_t": 1.0},
             "1": {"pid": 101, "last_step": 3, "phase": "step", "last_seen_t": 1.0}}
    return SimpleNamespace(collector=SimpleNamespace(ranks={0: None, 1: None}, last_ranks=ranks), actions=[])


def _vanished(rank: int):
    rule = load_catalogue().get("COMM202")
    assert rule is not None
    return finding_from_hit(rule, Hit(message=f"rank {rank} vanished during step 4", rank=rank, step=4,
                                      evidence=(Evidence("x", fact="run.ranks"),)))


def test_the_rank_with_the_fatal_dump_is_the_crash_not_the_one_killed_after_it(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    shutil.copy(FIX / "crash_rank1.stack.txt", tmp_path / "events" / "rank_1.stack.txt")
    (tmp_path / "events" / "rank_0.stack.txt").write_text("")  # rank 0: killed by msrun, no fatal dump
    out = Extras(tmp_path, _NoTail(), stacks=False)(_sup(tmp_path), [_vanished(0)], True)
    crashes = [f for f in out if f.rule == "COMM202"]
    assert [(f.rank, f.step) for f in crashes] == [(1, 4)]
    assert "Segmentation fault" in crashes[0].message
    assert any(e.text.startswith("faulthandler (rank 1): Fatal Python error: Segmentation fault at ")
               and "custom_loop.py:70 <module>" in e.text for e in crashes[0].evidence)


def test_without_a_fatal_dump_the_rules_verdict_stands(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    out = Extras(tmp_path, _NoTail(), stacks=False)(_sup(tmp_path), [_vanished(0)], True)
    assert [(f.rule, f.rank) for f in out] == [("COMM202", 0)]
