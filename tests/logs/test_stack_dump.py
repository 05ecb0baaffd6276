"""A stack dump of a waiting process (py-spy, faulthandler) with no error line is a hang report: the verdict says
so, names the waiting thread's innermost frame, and its frames give the area hint; it is never a clean bill of
health, and an error line anywhere still heads (round 77 d: hang threads paste py-spy dumps, which were read as
nothing at all)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

PYSPY = """Process 12345: python train.py
Python v3.10.12 (/usr/bin/python3.10)

Thread 12400 (idle): "Thread-1"
    wait (threading.py:324)
    run (tqdm/_monitor.py:60)
Thread 12345 (idle): "MainThread"
    barrier (torch/distributed/distributed_c10d.py:3696)
    wrapper (torch/distributed/c10d_logger.py:79)
    main (train.py:88)
    <module> (train.py:120)
"""

# faulthandler.dump_traceback_later: threads newest first, the main thread last
FAULTHANDLER = """Timeout (0:30:00)!
Thread 0x00007f2c1bfff700 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 324 in wait
  File "/usr/lib/python3.10/threading.py", line 607 in wait
Thread 0x00007f2c3d4f1740 (most recent call first):
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3696 in barrier
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/c10d_logger.py", line 79 in wrapper
  File "/work/train.py", line 55 in train
  File "/work/train.py", line 99 in <module>
"""


def _logs(tmp_path: Path, text: str) -> tuple[int, dict]:
    log = tmp_path / "paste.log"
    log.write_text(text)
    res = run_cli("logs", "--json", str(log))
    return res.rc, json.loads(res.out)


def _guesses(payload: dict) -> list[tuple[str, str]]:
    return [(f["rule"], f["evidence"][0]["text"]) for f in payload["findings"] if f["rule"].endswith("097")]


def test_a_py_spy_dump_is_a_hang_report_of_its_main_thread(tmp_path: Path) -> None:
    rc, out = _logs(tmp_path, PYSPY)
    rc_ = out["root_cause"]
    assert rc == 1 and rc_["verdict"] == "stack-dump", rc_
    assert "`barrier` in `torch/distributed/distributed_c10d.py`" in rc_["reason"]  # MainThread, not Thread-1
    assert rc_["frames"][-1] == "torch/distributed/distributed_c10d.py" and len(rc_["frames"]) == 4
    assert _guesses(out) == [("COMM097", "barrier(")]


def test_a_faulthandler_timeout_dump_keeps_the_last_thread_and_is_no_error(tmp_path: Path) -> None:
    rc, out = _logs(tmp_path, FAULTHANDLER)
    rc_ = out["root_cause"]
    assert rc == 1 and rc_["verdict"] == "stack-dump", rc_  # `Timeout (0:30:00)!` is the dump's header, not an error
    assert "`barrier`" in rc_["reason"] and rc_["evidence"][0]["line"] == 5
    assert [g[0] for g in _guesses(out)] == ["COMM097"]


def test_a_dump_stopped_in_the_dataloaders_wait_is_data202s(tmp_path: Path) -> None:
    # a rule that reads the waiting frame names more than the verdict "stack-dump" (round 78 a: DATA202)
    rc, out = _logs(tmp_path, FAULTHANDLER.replace(
        '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3696 in barrier\n',
        '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1133 in _try_get_data\n'))
    assert rc == 1 and out["root_cause"]["rule"] == "DATA202", out["root_cause"]


def test_an_error_beside_the_dump_still_heads(tmp_path: Path) -> None:
    rc, out = _logs(tmp_path, PYSPY + "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, "
                    "unhandled system error, NCCL version 2.14.3\n")
    assert out["root_cause"]["verdict"] != "stack-dump" and out["root_cause"]["rule"] == "COMM710", out["root_cause"]


def test_frames_like_lines_outside_a_dump_are_not_frames(tmp_path: Path) -> None:
    # a py-spy frame's shape is read only right after a dump's thread header or frame
    rc, out = _logs(tmp_path, "loading weights\n    wait (torch/utils/foo.py:42)\nValueError: bad shape in layer 3\n")
    assert out["root_cause"]["verdict"] != "stack-dump"


def test_a_tracebacks_frames_after_a_dump_are_not_the_dumps(tmp_path: Path) -> None:
    rc, out = _logs(tmp_path, PYSPY + '  File "/work/train.py", line 12, in main\n    load_checkpoint(path)\n')
    rc_ = out["root_cause"]
    assert rc_["verdict"] == "incomplete-traceback" and rc_["frames"] == ["/work/train.py"], rc_


# The traceback a Ctrl-C prints (the frames of dusty-nv/jetson-inference#854, a training stuck at the last batch of
# an epoch: the user pressed Ctrl-C and pasted where it was), ended by Python's bare `KeyboardInterrupt`
CTRL_C = """^CTraceback (most recent call last):
  File "train_ssd.py", line 346, in <module>
    val_loss, val_regression_loss, val_classification_loss = test(val_loader, net, criterion, DEVICE)
  File "train_ssd.py", line 150, in test
    for _, data in enumerate(loader):
  File "/home/hkuit155/.local/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 363, in __next__
    data = self._next_data()
  File "/home/hkuit155/.local/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 974, in _next_data
    idx, data = self._get_data()
  File "/home/hkuit155/.local/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 941, in _get_data
    success, data = self._try_get_data()
  File "/home/hkuit155/.local/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 779, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
KeyboardInterrupt
"""


# a worker's traceback at Ctrl-C (chainer/chainercv#391: a multiprocess iterator's worker waiting on its queue lock)
CTRL_C_WORKER = """Traceback (most recent call last):
  File "/opt/conda/lib/python3.6/multiprocessing/process.py", line 249, in _bootstrap
    self.run()
  File "/opt/conda/lib/python3.6/multiprocessing/process.py", line 93, in run
    self._target(*self._args, **self._kwargs)
  File "/opt/conda/lib/python3.6/site-packages/chainer/iterators/multiprocess_iterator.py", line 386, in _worker
    cnt, mem_index, index = in_queue.get()
  File "/opt/conda/lib/python3.6/multiprocessing/synchronize.py", line 96, in __enter__
    return self._semlock.__enter__()
KeyboardInterrupt
"""


def test_a_ctrl_c_traceback_is_a_hang_report_not_a_cut_traceback(tmp_path: Path) -> None:
    # before, the bare `KeyboardInterrupt` was not read at all: "ends without its exception line", paste more
    rc, out = _logs(tmp_path, CTRL_C_WORKER)
    rc_ = out["root_cause"]
    assert rc == 1 and rc_["verdict"] == "stack-dump", rc_
    assert "Ctrl-C" in rc_["reason"] and "`__enter__` in `/opt/conda/lib/python3.6/multiprocessing/synchronize.py`" \
        in rc_["reason"], rc_["reason"]
    assert not [f for f in out["findings"] if f["severity"] == "error"]  # the interrupt is no error of its own


def test_a_ctrl_c_in_the_dataloaders_wait_is_data202s(tmp_path: Path) -> None:
    rc, out = _logs(tmp_path, CTRL_C)
    assert rc == 1 and out["root_cause"]["rule"] == "DATA202", out["root_cause"]


def test_an_error_before_the_ctrl_c_still_heads(tmp_path: Path) -> None:
    rc, out = _logs(tmp_path, "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, "
                    "unhandled system error, NCCL version 2.14.3\n" + CTRL_C)
    assert out["root_cause"]["rule"] == "COMM710", out["root_cause"]


def test_a_keyboard_interrupt_with_a_message_or_alone_is_no_dump(tmp_path: Path) -> None:
    # vLLM raises `KeyboardInterrupt("MQLLMEngine terminated")` when its engine dies: not a user's Ctrl-C
    rc, out = _logs(tmp_path, CTRL_C.replace("KeyboardInterrupt\n", "KeyboardInterrupt: MQLLMEngine terminated\n"))
    assert out["root_cause"]["verdict"] != "stack-dump", out["root_cause"]
    rc, out = _logs(tmp_path, "epoch 3 step 120 loss 0.52\nKeyboardInterrupt\n")
    assert out["root_cause"].get("verdict") != "stack-dump" and not out["findings"], out
