"""One RootCause type, one JSON shape (logs and report/watch serialise it the same way)."""

from msdoctor.engine.model import Evidence, Finding, Severity
from msdoctor.engine.rootcause import Consequence, RootCause

KEYS = {"rank", "rule", "step", "message", "evidence", "consequences", "chain", "caveat", "determined"}


def _finding() -> Finding:
    return Finding(rule="COMM201", severity=Severity.ERROR, title="t", message="rank 1 hung", cause="c", fix="f",
                   rank=1, step=4, evidence=[Evidence(text="no step for 9 s", fact="run.ranks")])


def test_from_finding_round_trips_through_json():
    rc = RootCause.from_finding(_finding(), consequences=[Consequence(0, "COMM203", "rank 0 timed out")],
                                chain=["rank 1 stopped at step 4"])
    d = rc.to_dict()
    assert set(d) == KEYS and d["determined"] is True
    assert d["evidence"] == [{"text": "no step for 9 s", "fact": "run.ranks"}]
    assert d["consequences"] == [{"rank": 0, "rule": "COMM203", "message": "rank 0 timed out"}]
    assert RootCause.from_dict(d) == rc


def test_undetermined_has_the_same_keys_and_says_why():
    d = RootCause.undetermined("nothing to correlate").to_dict()
    assert set(d) == KEYS
    assert (d["rank"], d["rule"], d["determined"], d["message"]) == (None, None, False, "nothing to correlate")


def test_from_dict_drops_malformed_parts():
    rc = RootCause.from_dict({"rank": "1", "rule": 5, "evidence": ["x", {"text": "ok"}], "consequences": [3]})
    assert (rc.rank, rc.rule, len(rc.evidence), rc.consequences) == (None, None, 1, ())
