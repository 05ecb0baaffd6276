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


def test_report_json_keeps_the_crash_verdict_of_the_fatal_dump(tmp_path: Path) -> None:
    """The closing report re-evaluates COMM202 from the events alone; two ranks that stopped at the same
    instant are both 'first' there. The live finding decided by the fatal dump wins in report.json."""
    import socket

    import orjson

    from msdoctor.commands.run import _closing_report
    from msdoctor.watch import events
    from msdoctor.watch.supervisor import FINDINGS_FILE

    host = socket.gethostname()
    for r in (0, 1):
        path = events.rank_file(tmp_path, r)
        path.parent.mkdir(parents=True, exist_ok=True)
        for ev in ({"t": 10.0, "rank": r, "kind": "start", "world": 2, "pid": 2**22 + 7 + r, "host": host},
                   {"t": 11.0, "rank": r, "kind": "step", "step": 3, "loss": 1.0},
                   {"t": 11.0, "rank": r, "kind": "phase", "step": 4, "phase": "step"}):
            events.append(path, ev)
    live = _vanished(1)
    live.data.update(fatal="Segmentation fault", t=11.0)
    (tmp_path / FINDINGS_FILE).write_bytes(orjson.dumps(dict(live.to_dict(), t=12.0, first_seen=12.0, update=1)) + b"\n")
    report = _closing_report(tmp_path, _NoTail(), inject=True)
    assert [(f["rule"], f["rank"]) for f in report["findings"] if f["rule"] == "COMM202"] == [("COMM202", 1)]
    assert (tmp_path / "report.json").is_file()
