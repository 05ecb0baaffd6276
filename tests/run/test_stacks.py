"""Stacks taken from outside (py-spy, pystack). Fixtures are the real dumps of a hung 2-rank job:
tests/run/scripts/model_train.py --fault hang under msrun (MindSpore 2.10 CPU), rank 1 blocked in its
data source, rank 0 in the gradient all-reduce."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from msdoctor.watch import stacks

FIX = Path(__file__).with_name("fixtures")
PIDS = {0: 31390, 1: 31394}  # the pids of that job, as the dumps name them


def _dump(rank: int) -> stacks.Dump:
    by_tid = {t.tid: t for t in stacks.parse_pyspy((FIX / f"hang_rank{rank}.pyspy.txt").read_text())}
    by_tid.update({t.tid: t for t in stacks.parse_pystack((FIX / f"hang_rank{rank}.pystack.txt").read_text())})
    return stacks.Dump(rank, PIDS[rank], 0.0, threads=list(by_tid.values()))


def test_the_waiting_rank_is_in_the_ring_all_reduce_and_the_hung_one_is_not() -> None:
    d0, d1 = _dump(0), _dump(1)
    wait = [f for f in d0.collective_wait if "[libc" not in f and "libstdc++" not in f]
    # innermost first, C++ names without return type and arguments
    assert wait[0].startswith("mindspore::ps::core::AbstractNode::CollectiveWait [")
    assert any("CollectiveOpsImpl::RunRingAllReduce<float>" in f for f in wait[:3])
    assert any("CollectiveOpsImpl::AllReduce<float>" in f for f in wait[:5])
    assert d1.collective_wait == []
    assert stacks.culprits([d0, d1]) == [1]
    # rank 1's main thread waits for the dataset; the thread in the job's own code is the sleeping source
    main = d1.main()
    assert main is not None and main.tid == PIDS[1]
    assert any("DatasetOp::GetNextRow" in f for f in main.frames)
    user = d1.user_threads()
    assert any(any("__getitem__ (" in f and "model_train.py:55)" in f for f in t.frames) for t in user)


def test_py_spy_alone_names_the_main_thread_and_python_frames() -> None:
    threads = stacks.parse_pyspy((FIX / "hang_rank0.pyspy.txt").read_text())
    main = next(t for t in threads if t.name == "MainThread")
    assert main.tid == PIDS[0] and main.python
    assert "mindspore::stub::StubNode::WaitValue [libmindspore_common.so]" in main.frames
    assert "_JitExecutor.compile (mindspore/graph/api.py:695)" in stacks.python_frames(main.frames)


def test_culprits_need_every_rank_and_a_difference() -> None:
    d0, d1 = _dump(0), _dump(1)
    assert stacks.culprits([d0]) is None
    assert stacks.culprits([d0, stacks.Dump(1, 1, 0.0)]) is None  # one rank could not be read
    assert stacks.culprits([d1, d1]) is None  # nobody waits: nothing to tell apart


def test_clean_cpp_symbols() -> None:
    assert stacks.clean("bool mindspore::fl::server::CollectiveOpsImpl::RunRingAllReduce<float>(unsigned int, "
                        "std::vector<unsigned long> const&)") == "mindspore::fl::server::CollectiveOpsImpl::RunRingAllReduce<float>"
    assert stacks.clean("time_sleep") == "time_sleep"


@pytest.mark.skipif(stacks.tool("py-spy") is None or stacks.tool("pystack") is None, reason="py-spy/pystack not installed")
def test_dump_a_live_process(tmp_path: Path) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text("import time\n\ndef wait_here():\n    time.sleep(120)\n\nprint('ready', flush=True)\nwait_here()\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        d = stacks.dump(0, proc.pid, tmp_path)
    finally:
        proc.kill()
        proc.wait()
    if d.ptrace_denied:
        pytest.skip(f"ptrace denied here: {d.tools}")
    assert d.tools == {"py-spy": "ok", "pystack": "ok"}, d.tools
    main = d.main()
    assert main is not None and any("sleeper.py:4)" in f and "wait_here" in f for f in main.frames)
    assert any("time_sleep" in f for f in main.frames)  # native frames too
    assert {Path(f).name for f in d.files} == {"rank_0.pyspy.txt", "rank_0.pystack.txt"}
    assert stacks.is_user(next(f for f in main.frames if "wait_here" in f))


def test_ptrace_denied_is_said_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "fake-tool"
    fake.write_text("#!/bin/sh\necho 'Error: Failed to attach: Operation not permitted (os error 1)' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(stacks, "tool", lambda name: str(fake))
    d = stacks.dump(3, 12345, tmp_path)
    assert d.ptrace_denied and not d.ok
    assert all(v.startswith("failed: Error: Failed to attach: Operation not permitted") for v in d.tools.values())
