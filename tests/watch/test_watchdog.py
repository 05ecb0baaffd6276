"""The in-rank watchdog: what it writes, how it encodes, that its own failures never reach training."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import orjson

from msdoctor.facts.run import parse_stack
from msdoctor.watch import events
from msdoctor.watch.watchdog import Watchdog, number


def _events(run, rank=0):
    return [orjson.loads(line) for line in events.rank_file(run, rank).read_bytes().splitlines()]


def _busy_here(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.01)


def test_events_of_a_loop(tmp_path):
    wd = Watchdog(tmp_path, rank=3, world=4, heartbeat_s=0.05).start({"lr": 0.1})
    for step in (1, 2):
        wd.phase("data", step)
        time.sleep(0.03)
        wd.phase("forward", step)
        _busy_here(0.12)  # heartbeats see the main thread here
        wd.step(step, loss=2.5, grad_norm=1.0)
    wd.close("ok")
    evs = _events(tmp_path, 3)
    kinds = [e["kind"] for e in evs]
    assert kinds[0] == "start" and kinds[-1] == "end" and evs[-1]["status"] == "ok"
    start = evs[0]
    assert start["pid"] == os.getpid() and start["world"] == 4 and start["config"] == {"lr": 0.1}
    steps = [e for e in evs if e["kind"] == "step"]
    assert [s["step"] for s in steps] == [1, 2]
    s2 = steps[1]
    assert 0.14 < s2["step_time"] < 1.0  # measured from the previous step, not given
    assert 0.025 < s2["data_wait"] < s2["step_time"]  # time in phase "data"
    assert s2["phases"]["forward"] >= 0.1 and s2["rss"] > 10 * 2**20
    beats = [e for e in evs if e["kind"] == "heartbeat"]
    assert any("_busy_here" in (b["where"] or "") and "test_watchdog.py" in b["where_user"] for b in beats)
    assert all(b["phase"] in ("init", "data", "forward", "step-done") for b in beats)


def test_non_finite_metrics_survive_json(tmp_path):
    wd = Watchdog(tmp_path, 0, heartbeat_s=10).start()
    wd.step(1, loss=float("nan"), grad_norm=float("inf"), loss_scale=-float("inf"))
    wd.close()
    step = next(e for e in _events(tmp_path) if e["kind"] == "step")
    assert (step["loss"], step["grad_norm"], step["loss_scale"]) == ("NaN", "Infinity", "-Infinity")
    assert str(number(step["loss"])) == "nan" and number(step["grad_norm"]) == float("inf")


def test_own_failures_are_contained(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    wd = Watchdog(blocker / "run", 0).start()  # cannot create a directory under a file
    assert not wd.enabled
    assert "disabled" in capsys.readouterr().err
    wd.phase("data", 1)
    wd.step(1, loss=1.0)
    wd.close()  # none of these raise

    class Bad:
        name = "bad"

        def asnumpy(self):
            raise RuntimeError("device lost")

    wd = Watchdog(tmp_path / "ok", 0, heartbeat_s=10).start()
    wd.step(1, loss=Bad())  # a metric that cannot be read becomes text
    wd.checksum_params(1, [Bad()])  # a checksum that fails becomes a watchdog_error event
    wd.close()
    evs = _events(tmp_path / "ok")
    assert next(e for e in evs if e["kind"] == "step")["loss"].startswith("<")
    assert any(e["kind"] == "watchdog_error" and "device lost" in e["error"] for e in evs)
    assert evs[-1]["watchdog_errors"] == 1


def test_sigusr1_dumps_the_main_thread_stack(tmp_path):
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(os.getcwd())!r})
        from msdoctor.watch.watchdog import Watchdog
        def stuck_here():
            print("ready", flush=True)
            time.sleep(60)
        Watchdog({str(tmp_path)!r}, 1, heartbeat_s=10).start()
        stuck_here()
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGUSR1)
        path = events.stack_file(tmp_path, 1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "stuck_here" not in path.read_text():
            time.sleep(0.05)
        assert proc.poll() is None  # the dump does not stop the rank
        main = next(e for e in _events(tmp_path, 1) if e["kind"] == "start")["main_thread"]
        frames = parse_stack(path.read_text(), main)
        assert frames[0].startswith("<string>:") and frames[0].endswith(" stuck_here")
        assert parse_stack(path.read_text(), "0x1") == []  # an unknown thread has no frames
    finally:
        proc.kill()
        proc.wait()


def test_mindspore_callback_in_model_train(tmp_path):
    import mindspore as ms
    import numpy as np
    from mindspore import dataset as ds
    from mindspore import nn

    ms.set_device("CPU")
    ms.set_seed(1)
    net = nn.Dense(4, 1)
    model = ms.Model(net, loss_fn=nn.MSELoss(), optimizer=nn.SGD(net.trainable_params(), 0.01))
    x = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32)
    data = ds.NumpySlicesDataset({"x": x, "y": x[:, :1].copy()}, shuffle=False).batch(4)
    wd = Watchdog(tmp_path, 0, heartbeat_s=10)
    model.train(2, data, callbacks=[wd.callback()], dataset_sink_mode=False)
    evs = _events(tmp_path)
    steps = [e for e in evs if e["kind"] == "step"]
    assert [s["step"] for s in steps] == list(range(1, 7))
    assert all(isinstance(s["loss"], float) and s["step_time"] > 0 for s in steps)
    assert "device_mem" in steps[0] and steps[0]["device_mem"] is None  # CPU reports no device memory
    assert evs[0]["kind"] == "start" and evs[-1] == {**evs[-1], "kind": "end", "status": "ok"}


def test_context_manager_records_the_exception_and_a_failed_end(tmp_path):
    try:
        with Watchdog(tmp_path, 0, heartbeat_s=10) as wd:
            wd.phase("forward", 4)
            raise ValueError("For 'MatMul' the input dimensions must be equal")
    except ValueError:
        pass
    evs = _events(tmp_path)
    exc = next(e for e in evs if e["kind"] == "exception")
    assert (exc["type"], exc["step"], exc["phase"]) == ("ValueError", 4, "forward")
    assert "MatMul" in exc["message"] and "Traceback" in exc["traceback"]
    assert evs[-1]["kind"] == "end" and evs[-1]["status"] == "failed"


def test_no_heartbeat_follows_the_end_event(tmp_path, monkeypatch):
    """A beat that was looking at the main thread when close() wrote "end" is dropped, not written after it (CI on a
    loaded machine saw `… end, heartbeat`): the end event is the last line of a rank's stream."""
    import threading

    import msdoctor.watch.watchdog as wdmod

    looking, go = threading.Event(), threading.Event()
    real_position, real_emit = wdmod.main_thread_position, Watchdog.emit

    def slow_position():
        looking.set()
        go.wait(5)
        return real_position()

    def emit(self, kind, **fields):
        real_emit(self, kind, **fields)
        if kind == "end":  # let the beat finish while close() is still between "end" and shutting the stream
            go.set()
            time.sleep(0.2)

    monkeypatch.setattr(wdmod, "main_thread_position", slow_position)
    monkeypatch.setattr(Watchdog, "emit", emit)
    wd = Watchdog(tmp_path, rank=0, heartbeat_s=0.01).start()
    assert looking.wait(5)
    wd.close("ok")
    time.sleep(0.1)
    assert [e["kind"] for e in _events(tmp_path, 0)][-1] == "end"
