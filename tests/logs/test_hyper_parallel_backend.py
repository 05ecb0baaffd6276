"""ENV883: MindSpore's `Environment variables RANK_ID has not been exported` in a job that names HyperParallel is the
backend choice (HyperParallel picked MindSpore for a PyTorch launch), not a rank-table launch (RT003, which yields to
it). The HyperParallel context is read also from the prose a paste puts before the embedded exception (an issue
title), which the scanner strips before matching the error."""

from __future__ import annotations

from tests.conftest import run_cli

# hyper-parallel #740: the issue title, the error embedded after the user's Chinese prose (real line)
TITLE = ("使用HyperParallel进行LlamaFactory FSDP2 qwen3vl-8b sft报错RuntimeError: Environment variables RANK_ID has not "
         "been exported, please export variables 'RANK_ID'\n")

# the same check as a traceback shows it: a frame of the hyper_parallel package, then MindSpore's message
# (frame path illustrative; the message is mindspore/communication/management.py's)
FRAMES = """\
Traceback (most recent call last):
  File "/root/hyper-parallel/hyper_parallel/platform/__init__.py", line 42, in get_platform
  File "/usr/local/lib/python3.12/site-packages/mindspore/communication/management.py", line 68, in _check_parallel_envs
RuntimeError: Environment variables RANK_ID has not been exported, please export variables 'RANK_ID'.
"""

# mindocr #101 (real lines): a MindSpore script started without msrun — the rank-table reading stays
PLAIN = """\
  File "/root/archiconda3/envs/mindocr_test/lib/python3.9/site-packages/mindspore/communication/management.py", line 68, in _check_parallel_envs
    raise RuntimeError("Environment variables RANK_ID has not been exported, please export variables 'RANK_ID'.")
RuntimeError: Environment variables RANK_ID has not been exported, please export variables 'RANK_ID'.
"""

# prose before an exception that names no context rule: nothing read from it
OTHER_PROSE = "多机训练时通信超时了。RuntimeError: Environment variables RANK_ID has not been exported, please export variables 'RANK_ID'\n"


def _verdict(tmp_path, text):
    log = tmp_path / "job.log"
    log.write_text(text, encoding="utf-8")
    return run_cli("logs", "--json", str(log)).json()


def test_title_prose_names_hyper_parallel(tmp_path):
    out = _verdict(tmp_path, TITLE)
    assert out["root_cause"]["rule"] == "ENV883"
    assert "HYPER_PARALLEL_PLATFORM=torch" in out["root_cause"]["message"]


def test_hyper_parallel_frame_beside_the_check(tmp_path):
    assert _verdict(tmp_path, FRAMES)["root_cause"]["rule"] == "ENV883"


def test_mindspore_script_without_hyper_parallel_stays_rank_table(tmp_path):
    assert _verdict(tmp_path, PLAIN)["root_cause"]["rule"] == "RT003"
    out = _verdict(tmp_path, OTHER_PROSE)
    assert out["root_cause"]["rule"] == "RT003"
    assert not any(f["rule"] == "ENV884" for f in out.get("findings") or [])
