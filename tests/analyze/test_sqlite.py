"""The SQLite exports (analysis.db, ascend_pytorch_profiler_<rank>.db) in the documented table layouts.

samples/profiles/gen_profile_db.py writes them from the real GPT-3 capture's CSV/JSON files; with the text
files removed, msdoctor must reach the same numbers from the databases alone.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from msdoctor.facts import profile as prof

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "profiles"
sys.path.insert(0, str(SAMPLES))

import gen_profile_db  # noqa: E402


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    text = prof.collect(SAMPLES / "msinsight_gpt3_2rank", tmpdir=tmp_path_factory.mktemp("a")).facts
    tree = tmp_path_factory.mktemp("db") / "capture"
    shutil.copytree(SAMPLES / "msinsight_gpt3_2rank", tree)
    assert gen_profile_db.convert(tree, db_only=True) == 2
    return text, prof.collect(tree, tmpdir=tmp_path_factory.mktemp("b")).facts


def test_db_only_tree_is_read_from_its_databases(both):
    _, db = both
    files = db["profile.files"]
    assert sorted({r["file"] for r in files["read"]}) == ["analysis.db", "ascend_pytorch_profiler.db"]
    assert files["skipped"] == [] and files["ignored"] == []


@pytest.mark.parametrize("fact", ["profile.ranks", "profile.comm_ops", "profile.links", "profile.top_ops", "profile.comm_wait"])
def test_databases_give_the_numbers_of_the_text_files(both, fact):
    """Equal, up to the ns integers of the databases where the CSV had 0.1 ns (kernel times)."""
    text, db = both

    def strip(rows):
        return [{k: (pytest.approx(v, abs=2e-3) if isinstance(v, float) else v) for k, v in r.items() if k != "source"}
                for r in rows]  # fmt: skip

    assert strip(db[fact]) == strip(text[fact])


def test_missing_preparing_stays_not_evaluated_from_analysis_db(both):
    _, db = both
    assert not db.is_known("profile.data_gaps") and "preparing" in db["profile.data_gaps"].reason


def test_database_without_the_documented_tables_is_skipped_with_the_reason(tmp_path):
    out = tmp_path / "r_1_20250101000000000_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    con = sqlite3.connect(out / "analysis.db")
    con.execute("CREATE TABLE Something (x INTEGER)")
    con.commit()
    con.close()
    (out / "ascend_pytorch_profiler_0.db").write_bytes(b"not a database at all" * 10)
    (out / "step_trace_time.csv").write_text("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n"
                                             "1,10,2,1,3,4\n")  # fmt: skip
    facts = prof.collect(tmp_path, tmpdir=tmp_path).facts
    reasons = {Path(s["path"]).name: s["reason"] for s in facts["profile.files"]["skipped"]}
    assert "none of StepTraceTime, CommAnalyzerTime, CommAnalyzerMatrix" in reasons["analysis.db"]
    assert "ascend_pytorch_profiler_0.db" in reasons
