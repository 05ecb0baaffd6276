"""An exception is recorded whichever hook sees it: another callback of Model.train (LossMonitor's NaN),
an uncaught exception in the main thread (sys.excepthook) or in another thread (threading.excepthook).

Before, a NaN raised by LossMonitor left no exception event and no end event: the report called the
rank "killed (OOM killer, SIGKILL) or crashed below Python" (COMM202).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import orjson

from msdoctor import rundir
from tests.conftest import run_cli

ROOT = os.getcwd()


def _run(code: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def _events(run, rank=0):
    return [orjson.loads(x) for x in rundir.rank_file(run, rank).read_bytes().splitlines()]


def test_nan_raised_by_loss_monitor_is_recorded_not_called_a_kill(tmp_path):
    r = _run(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        import mindspore as ms, numpy as np
        from mindspore import dataset as ds, nn
        from mindspore.train import LossMonitor
        from msdoctor.watch.watchdog import Watchdog
        ms.set_device("CPU")
        net = nn.Dense(4, 1)
        model = ms.Model(net, loss_fn=nn.MSELoss(), optimizer=nn.SGD(net.trainable_params(), 0.01))
        x = np.ones((12, 4), np.float32)
        x[8:] = np.nan  # step 3 of 3 has a NaN loss
        data = ds.NumpySlicesDataset({{"x": x, "y": x[:, :1].copy()}}, shuffle=False).batch(4)
        wd = Watchdog({str(tmp_path)!r}, 0, world=1, heartbeat_s=10).start()
        model.train(1, data, callbacks=[LossMonitor(), wd.callback()], dataset_sink_mode=False)
    """)
    assert r.returncode != 0 and "NAN or INF" in r.stderr, r.stderr[-2000:]
    evs = _events(tmp_path)
    exc = [e for e in evs if e["kind"] == "exception"]
    assert len(exc) == 1 and exc[0]["type"] == "ValueError" and "NAN or INF" in exc[0]["message"]
    assert exc[0]["source"] == "Model.train"
    assert evs[-1]["kind"] == "end" and evs[-1]["status"] == "failed"  # closed by sys.excepthook
    rep = run_cli("report", str(tmp_path), "--json")
    rules = {(f["rule"], f["rank"]) for f in rep.json()["findings"]}
    assert ("COMM203", 0) in rules and ("COMM202", 0) not in rules, rep.out
    exc_f = next(f for f in rep.json()["findings"] if f["rule"] == "COMM203")
    assert any("recorded by Model.train" in e["text"] for e in exc_f["evidence"])


def test_uncaught_exceptions_in_main_and_other_threads_are_recorded(tmp_path):
    r = _run(f"""
        import sys, threading
        sys.path.insert(0, {ROOT!r})
        from msdoctor.watch.watchdog import Watchdog
        wd = Watchdog({str(tmp_path)!r}, 0, world=1, heartbeat_s=10).start()
        def loader():
            raise OSError("shard 7 unreadable")
        t = threading.Thread(target=loader, name="prefetch")
        t.start(); t.join()
        wd.step(1, loss=1.0)
        raise RuntimeError("custom loop failed at step 2")
    """)
    assert r.returncode == 1 and "custom loop failed" in r.stderr  # the previous hooks still print
    assert "shard 7 unreadable" in r.stderr
    evs = _events(tmp_path)
    exc = [(e["type"], e["source"]) for e in evs if e["kind"] == "exception"]
    assert exc == [("OSError", "threading.excepthook (thread prefetch)"), ("RuntimeError", "sys.excepthook")]
    assert evs[-1]["kind"] == "end" and evs[-1]["status"] == "failed"


def test_one_exception_seen_by_two_hooks_is_recorded_once(tmp_path):
    from msdoctor.watch.watchdog import Watchdog

    wd = Watchdog(tmp_path, 0, heartbeat_s=10).start()
    err = ValueError("x")
    wd.exception(err, source="Model.train")
    wd.exception(err, source="sys.excepthook")
    wd.close("failed")
    assert [e.get("source") for e in _events(tmp_path) if e["kind"] == "exception"] == ["Model.train"]
    assert sys.excepthook is not wd._hooks[0] and threading.excepthook is not wd._hooks[1]  # hooks removed
