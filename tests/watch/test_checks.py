"""Each live rule on a real fake-loop run of its fault: right rule, rank and step; the clean run is silent."""

from __future__ import annotations

import pytest

from msdoctor.checks.stats import mad, median, theil_sen
from msdoctor.watch.report import diagnose_dir, root_cause, timeline

FAULT = 7  # tests/watch/fakeloop.py FAULT_STEP; the faulty rank is 1

EXPECTED = {
    "nan": [("NUM201", 1, FAULT)],
    "spike": [("NUM202", 1, 20)],
    "underflow": [("NUM203", 0, FAULT), ("NUM203", 1, FAULT)],
    "desync": [("PAR201", 1, 5)],
    "seed": [("PAR202", 1, 0)],
    "straggler": [("PERF201", 1, FAULT)],
    "datastall": [("DATA201", 1, FAULT)],
    "crash": [("COMM202", 1, FAULT), ("COMM203", 0, FAULT)],
    "exception": [("COMM203", 0, FAULT), ("COMM203", 1, FAULT)],
}


def _found(run_dir):
    diag = diagnose_dir(run_dir)
    assert not diag.skipped
    return diag.findings, diag.not_evaluated


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_fault_is_named(finished_run, scenario):
    findings, _ = _found(finished_run(scenario))
    assert sorted((f.rule, f.rank, f.step) for f in findings) == EXPECTED[scenario]
    for f in findings:
        assert f.message and f.evidence and f.fix


def test_memory_growth_slope_and_exhaustion(finished_run):
    findings, _ = _found(finished_run("memleak"))
    assert len(findings) == 1, [(f.rule, f.rank, f.step, f.message) for f in findings]
    (f,) = findings
    assert (f.rule, f.rank) == ("MEM201", 1)
    assert 3 <= f.step <= FAULT  # after the warm-up cut, the leak (8 MiB/step from step 3) is on
    assert 7 * 2**20 < f.data["slope_bytes_per_step"] < 9 * 2**20
    assert f.data["exhaust_step"] > 30


def test_clean_run_is_silent_and_fully_evaluated(finished_run):
    findings, not_evaluated = _found(finished_run("clean"))
    assert findings == [] and not_evaluated == []


def test_root_cause_is_the_classified_exception_not_the_peer_timeout(finished_run):
    findings, _ = _found(finished_run("exception"))
    by_rank = {f.rank: f for f in findings}
    assert by_rank[1].data["classified_as"] == "NUM096"  # MatMulExt shape error: PAR001's twin (no layout named)
    assert "classified_as" not in by_rank[0].data  # rank 0's barrier timeout matches no signature
    rc = root_cause(findings)
    assert (rc.rule, rc.rank, rc.step) == ("COMM203", 1, FAULT)
    assert [c.rank for c in rc.consequences] == [0]
    assert [(r["rank"], r["rule"]) for r in timeline(findings)] == [(1, "COMM203"), (0, "COMM203")]


def test_crash_is_the_root_and_rank0_timeout_follows(finished_run):
    findings, _ = _found(finished_run("crash"))
    rc = root_cause(findings)
    assert (rc.rule, rc.rank, rc.step) == ("COMM202", 1, FAULT)


def test_robust_statistics():
    from msdoctor.watch.stats import sign_test_p

    assert sign_test_p(6, 6) == 1 / 64 and sign_test_p(0, 6) == 1.0 and sign_test_p(9, 10) == 11 / 1024
    assert median([3, 1, 2]) == 2 and median([1, 2, 3, 4]) == 2.5
    assert mad([1, 1, 1, 1, 100]) == 0  # one outlier does not move it
    xs = list(range(20))
    ys = [5 * x + 3 for x in xs]
    ys[7] = 1e6  # an outlier
    assert theil_sen(xs, ys) == pytest.approx(5)


def test_nan_origin_waits_for_the_peers_of_that_step():
    """Live, rank 0's all-reduced NaN gradient can arrive before rank 1's NaN loss of the same step."""
    from pathlib import Path

    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import run_checks
    from msdoctor.engine.facts import Facts

    facts = Facts.load(Path(__file__).parents[1] / "rules" / "fixtures" / "NUM201.fire.json")
    rule = [load_catalogue().get("NUM201")]
    assert [(f.rank, f.step) for f in run_checks(rule, facts).findings] == [(1, FAULT)]
    series = facts["run.series"]["1"]
    cut = series["step"].index(FAULT)
    early = {c: v[:cut] for c, v in series.items()}  # rank 1's step 7 not written yet, rank 1 alive
    ranks = {k: dict(v) for k, v in facts["run.ranks"].items()}
    ranks["1"].update(alive=True, ended=None, last_step=FAULT - 1, last_seen_t=facts["run.now"])
    facts.set("run.series", {**facts["run.series"], "1": early})
    facts.set("run.ranks", ranks)
    assert run_checks(rule, facts).findings == []  # not rank 0: wait for rank 1's step
    ranks["1"].update(alive=False)
    assert [f.rank for f in run_checks(rule, facts).findings] == [0]  # rank 1 gone: rank 0 is all we know
