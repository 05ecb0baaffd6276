"""A log of a known grammar that holds no error, in an issue's paste whose error is a line of no grammar (the prose
around the log, a line a tool printed bare): that line is read as a plain paste's line is, so the fallback and
"unrecognised error" see it, where msdoctor used to say "no error or warning found". A line that names its own
level (`[INFO]` of a Go daemon, Python's `…: TracerWarning:`) stays that level's line, and a log that holds an error
by its level is read by levels only. Lines copied exactly from tests/realworld/logs/<case>/ (named beside each), save
the two marked as made up."""

from __future__ import annotations

from pathlib import Path

from msdoctor.checks.logs import unclassified_events
from msdoctor.facts.logs import collect
from msdoctor.wordinggen import stripped_catalogue
from tests.conftest import run_cli

# paddlespeech-4058-speech-server-npu-pad3d-only-constant-mode-reflect-2025: glog lines of Paddle's custom device
GLOG = [
    "I0414 15:31:43.721439 40448 init.cc:158] Finished in LoadCustomDevice with libs_path: "
    "[/usr/local/lib/python3.9/dist-packages/paddle_custom_device]",
    "I0414 15:31:43.721496 40448 init.cc:243] CustomDevice: npu, visible devices count: 8",
]
# the same case: the error, quoted in the issue's own sentence (cut at the page's end as the case has it)
PROSE = ('NPU的paddle的镜像出现(Unimplemented) npu npu only support mode=constant right now,but received mode is '
         'reflect . [Hint: Expected mode == "constant", but received mode:reflect != "constant":constant.] (at /p')
# ascend-device-plugin-66-vnpu-vdev-activity-8255-destroyed-npu-smi-8005: a Go daemon's INFO line with "not exist"
GO_INFO = ("[2026-04-28 07:58:58.469699][INFO]     157     kubeclient/kube_cache.go:124    "
           "pod(chendan/quickstart-job-completion-task-0) is not exist in indexer")
# qwen-ascend-llm-7-export-onnx-npu-killed-host-oom-2024: Python's warnings module ("can't", "incorrect")
PY_WARNING = ("/root/qwen-ascend-llm/export/modeling_qwen2.py:126: TracerWarning: Converting a tensor to a Python "
              "boolean might cause the trace to be incorrect. We can't record the data flow of Python values, so this "
              "value will be treated as a constant in the future. This means that the trace might not generalize to "
              "other inputs!")
# made up: an error by its level, in MindSpore's own grammar
ME_ERROR = ("[ERROR] ME(1,ffff,python):2024-01-01-00:00:00.000.000 [train.py:1] something went wrong")


def _unclassified(tmp_path: Path, lines: list[str]) -> list[str]:
    f = tmp_path / "paste.log"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], stripped_catalogue())  # no rule at all: only the reading of lines decides
    return [e["text"] for e in unclassified_events(facts)]


def test_the_error_in_prose_beside_a_quiet_log_is_read(tmp_path: Path) -> None:
    texts = _unclassified(tmp_path, [*GLOG, PROSE])
    assert len(texts) == 1 and "only support mode=constant" in texts[0]


def test_a_chinese_statement_of_the_failure_beside_a_quiet_log_is_read(tmp_path: Path) -> None:
    """An issue's title that says in Chinese what failed, beside a log whose one line names its level (WARNING):
    the failure words the plain paste reads (不支持, 无法, 异常, …) count here too."""
    # mineru-5312-pp-ocrv6-310p-nantonum-inner-error-unsupported-npu-op-2026 (paste.log's loguru line, title.log)
    warning = ("2026-07-17 03:02:25.065 | WARNING | mineru.backend.hybrid.hybrid_analyze:"
               "_apply_medium_table_orientation_labels:439 - Hybrid medium effort table orientation classification "
               "failed: The Inner error is reported as above. The process exits for this inner error, and the current "
               "working operator name is NanToNum.")
    title = "MinerU 3.4 的 PP-OCRv6 在 300i/310P 上触发了不支持的 NPU 算子"
    texts = _unclassified(tmp_path, [warning, title])
    assert texts == [title], texts


def test_a_line_that_names_its_level_is_not_an_error(tmp_path: Path) -> None:
    assert _unclassified(tmp_path, [*GLOG, GO_INFO, PY_WARNING]) == []


def test_a_log_with_an_error_by_its_level_is_read_by_levels(tmp_path: Path) -> None:
    """The prose is not read as an error where the log already holds one: the log's own error is what failed."""
    texts = _unclassified(tmp_path, [*GLOG, ME_ERROR, PROSE])
    assert texts == ["something went wrong"] or texts == [ME_ERROR], texts


def test_cli_says_the_error_instead_of_a_clean_bill(tmp_path: Path) -> None:
    f = tmp_path / "paste.log"
    f.write_text("\n".join([*GLOG, PROSE]) + "\n", encoding="utf-8")
    r = run_cli("logs", "--json", str(f))
    rc = r.json()["root_cause"]
    assert rc.get("rule") or rc.get("verdict") == "unrecognised-error", rc
    assert r.rc != 0 or rc.get("rule"), (r.rc, rc)
    assert "nothing to correlate" not in str(rc.get("reason", ""))


def test_a_quiet_log_without_error_words_stays_clean(tmp_path: Path) -> None:
    f = tmp_path / "paste.log"
    f.write_text("\n".join([*GLOG, GO_INFO]) + "\n", encoding="utf-8")
    r = run_cli("logs", "--json", str(f))
    assert r.rc == 0 and r.json()["root_cause"].get("rule") is None, r.out


def test_an_error_after_many_warnings_still_counts(tmp_path: Path) -> None:
    """A long log whose first events are all a rule's warnings and whose error comes late holds an error: its prose
    is not read (only the first 40 events are kept at the start; the last ones are looked at too)."""
    from msdoctor.engine.catalogue import load_catalogue

    # tests/rules/fixtures/DATA002.log: MindSpore's slow-pipeline warning, a root warning rule's line
    slow = ("[WARNING] MD(1,f,python):2023-03-25-15:29:14.801.601 [data_queue_op.cc:1] Bad performance attention, it "
            "waits more than 25 seconds to fetch a batch of data from dataset pipeline.")
    prose = "部署时报错 the frobnicator failed to start"  # made up: a prose line no rule knows
    f = tmp_path / "paste.log"
    f.write_text("\n".join([*GLOG, prose, *[slow] * 60, ME_ERROR]) + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], load_catalogue())
    texts = [e["text"] for e in unclassified_events(facts)]
    assert len(texts) == 1 and "something went wrong" in texts[0], texts


def test_a_clean_reading_does_not_claim_no_warning(tmp_path: Path) -> None:
    """The scan reads the lines a rule or an error marker points at, not every warning: a log whose only sign is a
    warning no rule knows must not be called free of warnings (as vllm-ascend-5949-2node-910b2-ray-c10d-server-socket-
    198-18-timed-out-2026's c10d `… has timed out, will retry.` lines were, with the rule that knows them off)."""
    line = "[W116 05:41:45.632092587 socket.cpp:929] [frob] The frobnicator stalled, will retry."  # made up
    f = tmp_path / "paste.log"
    f.write_text("\n".join([*GLOG, line]) + "\n", encoding="utf-8")
    r = run_cli("logs", str(f))
    assert r.rc == 0, r.out
    assert "No error found, nor a warning any rule knows" in r.out and "No error or warning" not in r.out, r.out
