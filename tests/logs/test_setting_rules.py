"""A rule that reads a setting (ENV824: `export ASCEND_LAUNCH_BLOCKING=1` left in a launch script) is the cause only
beside a failure it causes (NUM047's synchronise refused under graph capture, 107027); beside another error, known or
not, or alone, it is context: an info finding, and the error heads the verdict (SETTING_RULES in
msdoctor/checks/logs.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli

CASE = next((Path(__file__).resolve().parents[1] / "realworld" / "logs").glob("vllm-ascend-2138-*"))


def _report(tmp_path, text: str) -> dict:
    p = tmp_path / "paste.log"
    p.write_text(text, encoding="utf-8")
    return run_cli("logs", "--json", str(p)).json()


def test_setting_heads_beside_the_failure_it_causes():
    assert run_cli("logs", "--json", str(CASE)).json()["root_cause"]["rule"] == "ENV824"


def test_setting_beside_an_unknown_error_is_context(tmp_path):
    rep = _report(tmp_path, "export ASCEND_LAUNCH_BLOCKING=1\npython serve.py\nTraceback (most recent call last):\n"
                            '  File "serve.py", line 3, in <module>\n    run()\n'
                            "QuuxError: the frobnicator rejected the widget table\n")
    assert rep["root_cause"].get("rule") != "ENV824"
    env824 = [f for f in rep["findings"] if f["rule"] == "ENV824"]
    assert env824 and all(f["severity"] == "info" for f in env824)


def test_setting_alone_is_context(tmp_path):
    rep = _report(tmp_path, "export ASCEND_LAUNCH_BLOCKING=1\npython serve.py --model x\n")
    assert rep["root_cause"].get("rule") != "ENV824"
    assert [f["severity"] for f in rep["findings"] if f["rule"] == "ENV824"] == ["info"]


# A call echoed in a traceback is read the same way: torch_npu's ATB example interface `_npu_matmul_add_fp32` (ENV835)
# heads the verdict beside the ATB creation failure it leads to (NUM060, Ascend/pytorch #94), and is context beside
# any other error.
CALL_CASE = next((Path(__file__).resolve().parents[1] / "realworld" / "logs").glob("ascend-pytorch-94-*"))


def test_call_heads_beside_the_failure_it_causes():
    assert run_cli("logs", "--json", str(CALL_CASE)).json()["root_cause"]["rule"] == "ENV835"


def test_call_beside_another_error_is_context(tmp_path):
    rep = _report(tmp_path, "Traceback (most recent call last):\n  File \"/workspace/a.py\", line 13, in <module>\n"
                            "    torch_npu._npu_matmul_add_fp32(x, w, c)\n"
                            "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.00 GiB total capacity; "
                            "58.00 GiB already allocated; 1.00 GiB free)\n")
    assert rep["root_cause"].get("rule") == "MEM013"
    assert [f["severity"] for f in rep["findings"] if f["rule"] == "ENV835"] == ["info"]
