"""Live diagnosis, measured side by side in one run each.

1. Time to diagnosis of a hung rank: ``msdoctor train --workers 2 --inject hang:rank=1,step=S`` (real
   MindSpore, msrun, 2 CPU ranks). From the moment rank 1 stops (its last progress event) to the
   supervisor's finding naming it (``first_seen`` in findings.jsonl), against MindSpore's own
   failure in the same run: rank 0's collective error (its exception event), or the job's end.
2. Overhead: the bundled GPT (tiny config) trained in one process, blocks of steps with and without
   the watchdog interleaved (ABAB… so drift of the shared machine hits both), plus the exact time
   spent inside the watchdog calls of every step.

    nice -n 10 .venv/bin/python bench/bench_watch.py [--steps 48] [--skip-hang] [--write]

``--write`` replaces the ``## live diagnosis`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def hang_run(step: int) -> dict[str, float | str]:
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as d:
        run = Path(d) / "run"
        t0 = time.time()
        proc = subprocess.run(
            [sys.executable, "-m", "msdoctor", "train", "--workers", "2", "--steps", str(step + 4),
             "--inject", f"hang:rank=1,step={step}", "--run-dir", str(run), "--json"],
            capture_output=True, cwd=ROOT, timeout=900, check=False,
        )
        wall = time.time() - t0
        ev = {r: [orjson.loads(x) for x in (run / "events" / f"rank_{r}.jsonl").read_bytes().splitlines()] for r in (0, 1)}
        stop = max(e["t"] for e in ev[1] if e["kind"] in ("phase", "step"))
        found = [orjson.loads(x) for x in (run / "findings.jsonl").read_bytes().splitlines()]
        hang = next(f for f in found if f["rule"] == "COMM201" and f["rank"] == 1)
        fail = [e["t"] for e in ev[0] if e["kind"] == "exception"]
        meta = orjson.loads((run / "run.json").read_bytes())
        framework = fail[0] if fail else float(meta["ended"])
        first_line = next((e for e in ev[0] if e["kind"] == "exception"), {}).get("message", "job ended")
        return {
            "diagnosis_s": hang["first_seen"] - stop,
            "framework_s": framework - stop,
            "framework_what": f"rank 0 {first_line.strip().splitlines()[0][:80]}" if fail else "job end",
            "collective_timeout_s": float(meta.get("collective_timeout_s") or 0),
            "stack": any(e["text"].startswith("stack of rank 1") for e in found[-1]["evidence"]) or any(
                any(e["text"].startswith("stack of rank 1") for e in f["evidence"]) for f in found if f["rule"] == "COMM201"
            ),
            "where": hang["data"].get("where", ""),
            "wall_s": wall,
            "exit": proc.returncode,
        }


def overhead(steps: int, block: int) -> dict[str, float]:
    import mindspore as ms
    import numpy as np
    from msdoctor_trainer.config import Config
    from msdoctor_trainer.model import GPT

    from msdoctor.watch.watchdog import Watchdog

    ms.set_device("CPU")
    ms.set_seed(0)
    cfg = Config()
    net = GPT(cfg.model, cfg.parallel)
    opt = ms.nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-3)
    grad_fn = ms.value_and_grad(net, None, opt.parameters)
    rng = np.random.default_rng(0)
    batch = (cfg.train.global_batch_size // 2, cfg.model.seq_length + 1)
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as d:
        on = Watchdog(d, 0, 1).start({"bench": True})
        off = Watchdog(d, 1, 1, enabled=False)
        times: dict[bool, list[float]] = {True: [], False: []}
        inside: list[float] = []
        for i in range(steps + block):  # the first block warms up (graph build, allocator) and is dropped
            watched = (i // block) % 2 == 1
            wd = on if watched else off
            t0 = time.perf_counter()
            w = time.perf_counter()
            wd.phase("data", i)
            spent = time.perf_counter() - w
            tokens = ms.Tensor(rng.integers(0, cfg.model.vocab_size, size=batch, dtype=np.int32))
            w = time.perf_counter()
            wd.phase("forward", i)
            spent += time.perf_counter() - w
            loss, grads = grad_fn(tokens)
            w = time.perf_counter()
            wd.phase("collective", i)
            spent += time.perf_counter() - w
            opt(grads)
            lv = float(loss.asnumpy())
            w = time.perf_counter()
            wd.step(i, loss=lv, grad_norm=1.0, loss_scale=1.0, overflow=False)
            spent += time.perf_counter() - w
            if i >= block:
                times[watched].append(time.perf_counter() - t0)
                if watched:
                    inside.append(spent)
        on.close()
    med_on, med_off = statistics.median(times[True]), statistics.median(times[False])
    return {
        "steps_each": len(times[True]),
        "median_on_s": med_on,
        "median_off_s": med_off,
        "mean_on_s": statistics.fmean(times[True]),
        "mean_off_s": statistics.fmean(times[False]),
        "inside_us": statistics.median(inside) * 1e6,
        "inside_pct": 100 * statistics.median(inside) / med_on,
        "diff_pct": 100 * (med_on - med_off) / med_off,
    }


def section(h: dict | None, o: dict) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## live diagnosis",
        "",
        f"Measured {now} on this machine ({os.cpu_count()} CPUs, Python {platform.python_version()}, shared by six "
        "agents working at the same time: timings are noisy), under `nice -n 10`. `bench/bench_watch.py`.",
        "",
    ]
    if h is not None:
        lines += [
            "**Time to diagnosis of a hung rank** — one real run: `msdoctor train --workers 2 --inject hang:rank=1,…` "
            "(MindSpore 2.10 CPU, msrun). Clock starts at rank 1's last progress event.",
            "",
            "| what | seconds after rank 1 stopped |",
            "| --- | ---: |",
            f"| msdoctor supervisor: COMM201 names rank 1 (stack dumped: {'yes' if h['stack'] else 'no'}, at `{Path(str(h['where'])).name}`) | {h['diagnosis_s']:.1f} |",
            f"| MindSpore's own failure: {h['framework_what']} (trainer's CPU collective timeout {h['collective_timeout_s']:.0f} s) | {h['framework_s']:.1f} |",
            "",
            f"Whole job {h['wall_s']:.0f} s. On Ascend the peers would wait for HCCL_EXEC_TIMEOUT (1836 s by default) "
            "instead of the trainer's 30 s CPU timeout; the supervisor's delay does not depend on it (stall threshold: "
            "3 median step times, at least 5 s).",
            "",
        ]
    lines += [
        f"**Overhead** — the bundled GPT (tiny config) in one process, {o['steps_each']} steps with and "
        f"{o['steps_each']} without the watchdog, interleaved in blocks (same run). Per step the watchdog makes the "
        "trainer's calls: 3 × `phase()` + `step()` (one JSON line each) and a heartbeat thread every second.",
        "",
        "| | median step s | mean step s |",
        "| --- | ---: | ---: |",
        f"| without watchdog | {o['median_off_s']:.4f} | {o['mean_off_s']:.4f} |",
        f"| with watchdog | {o['median_on_s']:.4f} | {o['mean_on_s']:.4f} |",
        "",
        f"Time inside the watchdog calls: median {o['inside_us']:.0f} µs per step = **{o['inside_pct']:.3f} %** of the "
        f"step (target < 1 %), measured around each call. The difference of the two medians ({o['diff_pct']:+.1f} %) "
        "is far larger than that and changes sign between runs on this shared machine (other agents' jobs come and "
        "go between blocks): it is the machine's noise, which interleaving reduces but does not remove; the time "
        "inside the calls is the watchdog's cost.",
        "",
    ]
    return "\n".join(lines)


def write_section(text: str) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    cur = path.read_text() if path.exists() else "# Benchmark results\n"
    start = cur.find("## live diagnosis")
    if start < 0:
        new = cur.rstrip("\n") + "\n\n" + text
    else:
        nxt = cur.find("\n## ", start + 3)
        new = cur[:start] + text + ("\n" + cur[nxt + 1 :] if nxt >= 0 else "")
    path.write_text(new)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=160)
    ap.add_argument("--block", type=int, default=4)
    ap.add_argument("--hang-step", type=int, default=6)
    ap.add_argument("--skip-hang", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    h = None if args.skip_hang else hang_run(args.hang_step)
    o = overhead(args.steps, args.block)
    text = section(h, o)
    print(text)
    if args.write:
        write_section(text)


if __name__ == "__main__":
    main()
