"""Pieces of `msdoctor train` that need no MindSpore job: leftover processes, ports, the summary."""

from __future__ import annotations

import socket
import subprocess
import time

import orjson
import psutil

from msdoctor.commands.train import _ChildTracker, _summary, free_port


def test_tracker_ends_the_children_a_killed_launcher_leaves_behind():
    root = subprocess.Popen(["bash", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
    tracker = _ChildTracker(root.pid)
    deadline = time.monotonic() + 5
    while len(tracker.seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    children = set(tracker.seen)
    assert len(children) == 2
    root.kill()  # like --timeout killing msrun: its workers would be orphaned
    root.wait()
    assert sorted(tracker.kill_leftovers()) == sorted(children)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(
        psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in children
    ):
        time.sleep(0.1)
    assert not [p for p in children if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_free_port_is_bindable_and_outside_the_ephemeral_range():
    from msdoctor.commands.train import _ephemeral_range

    lo, hi = _ephemeral_range()
    ports = {free_port() for _ in range(5)}
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
        assert not lo <= port <= hi, (port, lo, hi)  # an outgoing connection's source port could take it
    assert len(ports) > 1  # drawn at random: two runs started together do not race for one port


def test_summary_per_rank_from_events(tmp_path):
    ev = tmp_path / "events"
    ev.mkdir()
    lines = [
        {"t": 1, "rank": 0, "kind": "step", "step": 1, "loss": 5.0},
        {"t": 2, "rank": 0, "kind": "step", "step": 2, "loss": 4.0},
        {"t": 3, "rank": 0, "kind": "end", "step": 2, "status": "ok"},
    ]
    (ev / "rank_0.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines) + b"{truncated")
    (ev / "rank_1.jsonl").write_bytes(orjson.dumps({"t": 1, "rank": 1, "kind": "exception", "type": "ValueError",
                                                   "message": "For BatchMatMul, bad\nsecond line"}) + b"\n")
    s = _summary(tmp_path, 3)
    assert s["0"] == {"steps": 2, "first_loss": 5.0, "last_loss": 4.0, "status": "ok"}
    assert s["1"]["steps"] == 0 and s["1"]["exception"] == "ValueError: For BatchMatMul, bad"
    assert s["2"] == {"steps": 0, "status": None}  # a rank that never wrote an event


def test_wait_without_supervisor_times_out_with_124():
    import time as _t

    from msdoctor.commands.train import _wait

    proc = subprocess.Popen(["sleep", "30"])
    t0 = _t.monotonic()
    assert _wait(proc, 0.3, t0) == 124 and proc.poll() is not None
    ok = subprocess.Popen(["true"])
    assert _wait(ok, None, _t.monotonic()) == 0
