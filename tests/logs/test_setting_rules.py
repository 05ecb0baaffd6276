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
