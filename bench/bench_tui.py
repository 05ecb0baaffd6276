"""The monitor under load: 64 and 1,024 ranks, each writing 20 events/s, replayed from a real run.

A generator process replays the event stream of a recorded 2-rank run (tests/tui/runs/straggler:
phase, step and heartbeat events of the bundled trainer; rank 1's events, slower by the injected
straggler, for one rank in 16) for N ranks at 20 events/s each, time stamps and steps rewritten.
The monitor app runs in this process (Textual's headless driver at 160x45: the same widgets,
compositor and refreshes as in a terminal, minus the terminal's own drawing), polling every 0.5 s.

Measured, side by side for 64 and 1,024 ranks in one run:

* update latency: from an event's time stamp to the end of the screen refresh that shows it
  (the newest event shown at each refresh; includes the 0.5 s poll interval);
* key latency: ``down`` pressed in the rank table, until the app has handled it and refreshed;
* CPU share: this process's CPU time (the tail worker and the UI; not the generator) over wall time,
  in % of one core; and the time per snapshot in the worker (read + fold) and in the UI (show).

    nice -n 10 .venv/bin/python bench/bench_tui.py [--seconds 20] [--write]

``--write`` replaces the ``## msdoctor monitor`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TEMPLATE = ROOT / "tests" / "tui" / "runs" / "straggler" / "events"
RATE = 20  # events per second per rank
TICK = 0.05


def _templates() -> dict[int, list[dict[str, Any]]]:
    out = {}
    for r in (0, 1):
        evs = [orjson.loads(x) for x in (TEMPLATE / f"rank_{r}.jsonl").read_bytes().splitlines()]
        out[r] = [e for e in evs if e["kind"] in ("phase", "step", "heartbeat")]
    return out


def generate(run: Path, ranks: int, seconds: float) -> None:
    """Write ``RATE`` events/s for each of ``ranks`` ranks for ``seconds`` (the replay generator)."""
    tpl = _templates()
    ev_dir = run / "events"
    ev_dir.mkdir(parents=True, exist_ok=True)
    fds = [os.open(ev_dir / f"rank_{r}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) for r in range(ranks)]
    t0 = time.time()
    for r, fd in enumerate(fds):
        os.write(fd, orjson.dumps({"t": t0, "rank": r, "kind": "start", "world": ranks, "pid": os.getpid()}) + b"\n")
    per_tick = max(1, round(RATE * TICK))
    i = 0
    steps = [0] * ranks
    next_t = t0
    while time.time() - t0 < seconds:
        now = time.time()
        for r, fd in enumerate(fds):
            src = tpl[1 if r % 16 == 1 else 0]
            buf = bytearray()
            for k in range(per_tick):
                ev = dict(src[(i + k) % len(src)], t=now, rank=r)
                if ev["kind"] == "step":
                    steps[r] += 1
                    ev["step"] = steps[r]
                elif "step" in ev:
                    ev["step"] = steps[r] + (ev["kind"] == "phase")
                buf += orjson.dumps(ev) + b"\n"
            os.write(fd, bytes(buf))
        i += per_tick
        next_t += TICK
        time.sleep(max(0.0, next_t - time.time()))
    for fd in fds:
        os.close(fd)


def measure(ranks: int, seconds: float) -> dict[str, Any]:
    from msdoctor.tui.app import MonitorApp

    latencies: list[float] = []
    shows: list[float] = []
    keys: list[float] = []
    polls: list[float] = []

    class Timed(MonitorApp):
        def show(self, snap):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            super().show(snap)
            shows.append(time.perf_counter() - t)
            first = oldest.pop(id(snap), None)
            if first is not None:
                self.call_after_refresh(lambda: latencies.append(time.time() - first))

    import msdoctor.tui.state as state_mod

    orig_poll, orig_snapshot, orig_apply = state_mod.RunState.poll, state_mod.RunState.snapshot, state_mod.RunState.apply
    oldest: dict[int, float] = {}  # id(snapshot) -> time stamp of the oldest event new in it
    batch_min: list[float] = []
    poll_cpu: list[float] = []

    def timed_poll(self):  # type: ignore[no-untyped-def]
        t, c = time.perf_counter(), time.thread_time()
        out = orig_poll(self)
        polls.append(time.perf_counter() - t)
        poll_cpu.append(time.thread_time() - c)
        return out

    def timed_apply(self, evs):  # type: ignore[no-untyped-def]
        evs = list(evs)
        ts = [e["t"] for e in evs if isinstance(e.get("t"), float)]
        if ts:
            batch_min.append(min(ts))
        return orig_apply(self, evs)

    def timed_snapshot(self):  # type: ignore[no-untyped-def]
        snap = orig_snapshot(self)
        if batch_min:
            oldest[id(snap)] = min(batch_min)
            batch_min.clear()
        return snap

    state_mod.RunState.poll = timed_poll  # type: ignore[method-assign]
    state_mod.RunState.apply = timed_apply  # type: ignore[method-assign]
    state_mod.RunState.snapshot = timed_snapshot  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as d:
        run = Path(d) / "run"
        (run / "events").mkdir(parents=True)
        gen = subprocess.Popen([sys.executable, __file__, "--generate", str(run), "--ranks", str(ranks),
                                "--seconds", str(seconds + 8)])
        try:
            time.sleep(2.0)  # the generator is writing before the monitor starts: it reads a backlog first

            async def scenario() -> dict[str, float]:
                app = Timed(run, poll_s=0.5)
                async with app.run_test(size=(160, 45)) as pilot:
                    while app.snapshot is None or len(app.snapshot.ranks) < ranks:
                        await pilot.pause(0.1)
                    latencies.clear()
                    shows.clear()
                    polls.clear()
                    w0, c0 = time.monotonic(), time.process_time()
                    while time.monotonic() - w0 < seconds:
                        t = time.perf_counter()
                        await pilot.press("down")
                        await pilot.pause()  # until the refresh it caused is done
                        keys.append(time.perf_counter() - t)
                        await pilot.pause(0.5)
                    wall, cpu = time.monotonic() - w0, time.process_time() - c0
                    return {"wall": wall, "cpu": cpu, "updates": app.updates}

            r = asyncio.run(scenario())
        finally:
            gen.kill()
            gen.wait()
        gen_rate = sum(p.read_bytes().count(b"\n") for p in (run / "events").glob("rank_*.jsonl")) / (seconds + 8)
    state_mod.RunState.poll = orig_poll  # type: ignore[method-assign]
    state_mod.RunState.apply = orig_apply  # type: ignore[method-assign]
    state_mod.RunState.snapshot = orig_snapshot  # type: ignore[method-assign]
    lat = sorted(latencies)
    return {
        "ranks": ranks,
        "events_per_s": ranks * RATE, "written_per_s": gen_rate,
        "lat_p50": _q(lat, 0.5), "lat_p95": _q(lat, 0.95), "lat_max": lat[-1] if lat else float("nan"),
        "key_p50": _q(sorted(keys), 0.5), "key_max": max(keys) if keys else float("nan"),
        "cpu_pct": 100.0 * r["cpu"] / r["wall"],
        "poll_ms": 1000 * statistics.median(polls) if polls else float("nan"),
        "poll_cpu_ms": 1000 * statistics.median(poll_cpu) if poll_cpu else float("nan"),
        "show_ms": 1000 * statistics.median(shows) if shows else float("nan"),
        "updates": r["updates"], "seconds": r["wall"],
    }


def _q(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def section(results: list[dict[str, Any]]) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## msdoctor monitor",
        "",
        f"Measured {now} on this machine ({os.cpu_count()} CPUs, Python {platform.python_version()}, shared with other "
        "agents' jobs: timings are noisy), under `nice -n 10`. `bench/bench_tui.py`.",
        "",
        f"A generator process replays a recorded run's events for N ranks at {RATE} events/s each; the monitor "
        "(headless, 160x45, polling every 0.5 s) runs in the bench process while `down` is pressed every 0.5 s.",
        "",
        "| ranks | events/s asked / written | update latency p50 / p95 / max (s) | key p50 / max (ms) | CPU of one core | "
        "worker read+fold per poll, wall / CPU (ms) | UI show per snapshot (ms) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r['ranks']} | {r['events_per_s']:,} / {r['written_per_s']:,.0f} | {r['lat_p50']:.2f} / {r['lat_p95']:.2f} / "
            f"{r['lat_max']:.2f} | {1000 * r['key_p50']:.0f} / {1000 * r['key_max']:.0f} | {r['cpu_pct']:.0f} % | "
            f"{r['poll_ms']:.0f} / {r['poll_cpu_ms']:.0f} | "
            f"{r['show_ms']:.1f} |")
    lines += [
        "",
        "Update latency runs from the time stamp of the oldest event new in a snapshot to the end of the refresh "
        "that shows it: the worst delay of any event, up to one poll interval (0.5 s) of it the wait for the "
        "next read. CPU is this process only (tail worker and UI; "
        "the generator is another process). The rank table, heat-strip and plots draw only the rows on screen.",
        "",
    ]
    return "\n".join(lines)


def write_section(text: str) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    cur = path.read_text() if path.exists() else "# Benchmark results\n"
    start = cur.find("## msdoctor monitor")
    if start < 0:
        new = cur.rstrip("\n") + "\n\n" + text
    else:
        nxt = cur.find("\n## ", start + 3)
        new = cur[:start] + text + ("\n" + cur[nxt + 1:] if nxt >= 0 else "")
    path.write_text(new)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--ranks", type=int, nargs="*", default=[64, 1024])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--generate", metavar="RUN", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        generate(Path(args.generate), args.ranks[0], args.seconds)
        return
    results = [measure(n, args.seconds) for n in args.ranks]
    text = section(results)
    print(text)
    if args.write:
        write_section(text)


if __name__ == "__main__":
    main()
