"""A pasted excerpt in no known log grammar (one bare line from an issue or a FAQ) is still read: its lines with
error words are errors, so rules and the wording fallback see them. A text without any stays exit 2.
Lines copied exactly from tests/realworld/logs/<case>/ (named beside each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor.checks.logs import unclassified_events
from msdoctor.errors import InputError
from msdoctor.facts.logs import collect
from msdoctor.wordinggen import stripped_catalogue
from tests.conftest import run_cli

# verl-doc-faq-torch-npu-detected-npu-not-available-2026
BARE = "torch_npu detected, but NPU device is not available or visible"
# mindspore-faq-nccl-connect-network-unreachable-socket-ifname-2022
NCCL_WARN = "include/socket.h:403 NCCL WARN Connect to XXX failed: Network is unreachable"
# mindspore-faq-cpu-pc-device-target-ascend-pointer-session-null-2022: MindSpore's null-pointer check, no other word
NULL_POINTER = "the pointer[session] is null"
# mindspeed-faq-torch-extensions-stale-lock-hang-2024: no error word
NO_ERROR = "Using ~/.cache/torch_extensions/py38_cpu as PyTorch extensions root..."


@pytest.mark.parametrize("line", [BARE, NCCL_WARN, NULL_POINTER])
def test_a_bare_error_line_is_read_when_no_rule_knows_it(tmp_path: Path, line: str) -> None:
    f = tmp_path / "paste.txt"
    f.write_text(line + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], stripped_catalogue())  # no rule at all: only the paste reading can find the error
    assert [e["text"] for e in unclassified_events(facts)] == [line]


def test_a_text_without_error_words_is_still_not_a_log(tmp_path: Path) -> None:
    f = tmp_path / "paste.txt"
    f.write_text(NO_ERROR + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="none holds a line of a known log grammar"):
        collect([str(f)], stripped_catalogue())
    r = run_cli("logs", str(f))
    assert r.rc == 2 and "known log grammar" in r.err


def test_paste_reading_is_only_for_texts_of_no_known_grammar(tmp_path: Path) -> None:
    """In a log of a known grammar a line is an error by its level, never by a word of its message."""
    f = tmp_path / "worker_0.log"
    f.write_text("[INFO] ME(1,ffff,python):2024-01-01-00:00:00.000.000 [train.py:1] epoch 1 failed samples: 0\n"
                 + BARE + "\n", encoding="utf-8")  # fmt: skip
    facts, _ = collect([str(f)], stripped_catalogue())
    assert unclassified_events(facts) == []


def test_cli_reads_the_bare_line(tmp_path: Path) -> None:
    f = tmp_path / "paste.txt"
    f.write_text(BARE + "\n", encoding="utf-8")
    r = run_cli("logs", str(f))
    assert r.rc == 1 and "not available or visible" in r.out, (r.out, r.err)
