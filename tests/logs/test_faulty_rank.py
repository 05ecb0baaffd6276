"""A message that names the rank at fault makes that rank the finding's rank (docs/architecture.md, "A line that
names the rank at fault"): the rank whose log holds the line is a bystander."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli

# sglang-5602-v045post1-deepseek-v3-multinode-gloo-monitoredbarrier-errors-from-rank-0-2025 (round 76 d): rank 6's
# line, rank 0 at fault
BARRIER = ("[rank6]:[E421 04:13:43.457389636 ProcessGroupGloo.cpp:143] Rank 6 successfully reached monitoredBarrier, "
           "but received errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.")  # fmt: skip


def _findings(tmp_path: Path, text: str) -> dict[str, object]:
    log = tmp_path / "paste.log"
    log.write_text(text + "\n", encoding="utf-8")
    res = run_cli("logs", "--json", str(log))
    return {f["rule"]: f.get("rank") for f in res.json()["findings"]}


def test_the_named_faulty_rank_is_the_findings_rank(tmp_path: Path) -> None:
    assert _findings(tmp_path, BARRIER)["COMM180"] == 0


def test_a_list_of_faulty_ranks_leaves_the_lines_rank(tmp_path: Path) -> None:
    # rank 0 collects the barrier and names two ranks: no one rank is the finding's, so it stays the line's
    got = _findings(tmp_path, "[rank0]: RuntimeError: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms")
    assert got["COMM180"] == 0
