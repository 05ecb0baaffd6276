"""`msdoctor logs` as a user runs it: exit codes, one-line errors, the JSON contract, the text diagnosis."""

from __future__ import annotations

import json
import os

from tests.conftest import run_cli
from tests.logs.conftest import SAMPLES


def test_missing_path_is_one_line_and_exit_2(tmp_path):
    r = run_cli("logs", str(tmp_path / "nope"))
    assert r.rc == 2 and r.out == ""
    assert r.err.strip().count("\n") == 0 and "no such file or directory" in r.err


def test_folder_without_logs_and_only_binary_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    r = run_cli("logs", str(tmp_path / "empty"))
    assert r.rc == 2 and "no log files found" in r.err and "Traceback" not in r.err
    junk = tmp_path / "junk.log"
    junk.write_bytes(bytes(range(256)) * 100)
    r = run_cli("logs", str(junk))
    assert r.rc == 2 and "no readable log file" in r.err and "binary" in r.err and "Traceback" not in r.err


def test_json_has_root_cause_timeline_and_skipped(tmp_path):
    (tmp_path / "core.log").write_bytes(b"\x7fELF\x00\x00\x00" * 2000)
    r = run_cli("logs", str(SAMPLES / "hang"), str(tmp_path / "core.log"), "--json")
    assert r.rc == 1, r.err
    d = r.json()
    assert d["command"] == "logs"
    rc = d["root_cause"]
    assert rc["rank"] == 1 and rc["rule"] == "COMM501" and rc["consequences"] == [0]
    assert any(e.get("file", "").endswith("worker_0.log") and "wait receiving [1," in e["text"] for e in rc["evidence"])
    tl = {row["rank"]: row for row in d["timeline"]}
    assert tl[0]["first_anomaly"]["rule"] == "COMM001" and tl[0]["ends"] == "consequence"
    assert tl[1]["first_anomaly"] is None and tl[1]["ends"] == "silent"
    assert tl[1]["last_progress"]["step"] == 2 and tl[1]["last_progress"]["text"].startswith("epoch: 1 step: 2")
    assert [s["reason"] for s in d["skipped"]] == ["binary content (not a text log)"]
    assert d["findings"][0]["rule"] == "COMM501"
    comm001 = next(f for f in d["findings"] if f["rule"] == "COMM001")
    assert comm001["count"] == 1  # the msrun console repeats the line: counted once


def test_text_output_is_a_clear_diagnosis():
    r = run_cli("logs", str(SAMPLES / "hang"))
    assert r.rc == 1
    head = r.out.splitlines()[:3]
    assert head[1].startswith("Root cause: rank 1 (COMM501)")
    assert "rank 1 is the likely culprit" in r.out
    assert "rank 0 waited for data from rank 1" in r.out.replace("\n", " ")


def test_no_error_anywhere_means_no_root_cause_and_exit_0(tmp_path):
    (tmp_path / "worker_0.log").write_text("epoch: 1 step: 1, loss is 0.5\nepoch: 1 step: 2, loss is 0.4\n")
    r = run_cli("logs", str(tmp_path), "--json")
    assert r.rc == 0
    d = r.json()
    assert d["root_cause"]["rank"] is None and "nothing to correlate" in d["root_cause"]["reason"]
    assert d["timeline"][0]["last_progress"]["step"] == 2


def test_bad_jobs_option():
    r = run_cli("logs", str(SAMPLES / "hang"), "--jobs", "0")
    assert r.rc == 2 and "--jobs" in r.err


def test_facts_snapshot_round_trip_gives_the_same_verdict(tmp_path):
    snap = tmp_path / "facts.json"
    first = run_cli("logs", str(SAMPLES / "hang"), "--json", "--dump-facts", str(snap))
    replay = run_cli("logs", "--facts", str(snap), "--json")
    assert first.rc == replay.rc == 1
    assert replay.json()["root_cause"] == first.json()["root_cause"]
    assert replay.json()["timeline"] == first.json()["timeline"]
    # every finding is replayed, the signature findings too (they are facts: logs.hits)
    assert replay.json()["findings"] == first.json()["findings"] and len(first.json()["findings"]) > 3
    snapshot = json.loads(snap.read_text())
    assert "logs.hits" in json.dumps(snapshot) and "logs.verdict" in json.dumps(snapshot)
    both = run_cli("logs", str(SAMPLES / "hang"), "--facts", str(snap))
    assert both.rc == 2 and "one of them" in both.err


def test_fifo_and_dangling_link_in_a_log_folder_are_skipped_not_read(tmp_path):
    # Opening a FIFO blocks until a writer comes: before, `msdoctor logs DIR` hung forever on one.
    (tmp_path / "worker_0.log").write_text("epoch: 1 step: 1, loss is 0.5\n")
    os.mkfifo(tmp_path / "worker_1.log")
    (tmp_path / "worker_2.log").symlink_to(tmp_path / "gone.log")
    r = run_cli("logs", str(tmp_path), "--json", timeout=60)
    assert r.rc == 0, r.err
    skipped = {s["file"]: s["reason"] for s in r.json()["skipped"]}
    assert skipped == {str(tmp_path / "worker_1.log"): "not a regular file",
                       str(tmp_path / "worker_2.log"): "not a regular file"}
