"""A bare exception line (an assert without a message) followed by the next traceback's header is the whole error:
vLLM's multiproc executor prints a worker's `AssertionError` and, on the next prefixed line, the same error's
`Traceback (most recent call last):` again (vllm-ascend #3865). The text after a bare exception (its "banner",
MindSpore's sections) stops at a traceback header, so the unrecognised error reads `AssertionError`, not the
exception glued to the next traceback's lines."""

from __future__ import annotations

from tests.logs.conftest import paste_root_cause

P = "(Worker_TP0 pid=137462) ERROR 10-29 08:32:26 [multiproc_executor.py:671] "
# vllm-ascend #3865's lines (real), the assert's source line replaced by one no rule reads
BARE = (P + "    assert quibble_state_ok(x)\n" + P + "AssertionError\n" + P + "Traceback (most recent call last):\n"
        + P + '  File "/vllm-workspace/vllm/vllm/v1/executor/multiproc_executor.py", line 666, in worker_busy_loop\n'
        + P + "    output = func(*args, **kwargs)\n")


def test_a_bare_exception_does_not_take_the_next_traceback_as_its_message(tmp_path):
    rc = paste_root_cause(tmp_path, BARE)
    assert rc["verdict"] == "unrecognised-error"
    assert "`AssertionError:`" in rc["reason"] and "Traceback" not in rc["reason"]


def test_a_bare_exception_keeps_the_message_printed_under_it(tmp_path):
    # a bare `ValueError:` whose message is on the next line (no traceback header there) still reads it
    rc = paste_root_cause(tmp_path, "ValueError:\nquibble factor 7 is outside the window\n")
    assert "quibble factor 7" in rc["reason"]
