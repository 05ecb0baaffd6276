"""`msdoctor preflight` side by side with `python -c "import mindspore; mindspore.run_check()"`.

Both are run the way a user runs them (a fresh interpreter each time, wall clock measured around
the subprocess), alternating, in the same run, under ``nice -n 10`` (the machine is shared). Each
run's peak RSS comes from ``wait4``'s rusage. Results go to the section
``## msdoctor preflight vs mindspore.run_check()`` of bench/RESULTS.md.

    .venv/bin/python bench/bench_preflight.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "RESULTS.md"
HEADING = "## msdoctor preflight vs mindspore.run_check()"

CASES: dict[str, list[str]] = {
    "msdoctor preflight (this machine)": [sys.executable, "-m", "msdoctor", "preflight", "--json", "--no-npu-smi"],
    "msdoctor preflight --root samples/roots/cann-8.0rc2 + env + rank table": [
        sys.executable, "-m", "msdoctor", "preflight", "--json", "--no-npu-smi",
        "--root", "samples/roots/cann-8.0rc2", "--env-file", "samples/roots/envs/bad-hccl.env",
        "--rank-table", "samples/ranktables/rank_gap.json",
    ],
    'python -c "import mindspore; mindspore.run_check()"': [
        sys.executable, "-c", "import mindspore; mindspore.run_check()",
    ],
}  # fmt: skip


def run_measured(argv: list[str]) -> tuple[float, float, int, str]:
    """Like run_once, but reaps the child itself with wait4 to get its peak RSS."""
    t = time.perf_counter()
    proc = subprocess.Popen(["nice", "-n", "10", *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    data = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = data.decode(errors="replace")
    lines = text.strip().splitlines()
    m = re.search(r'"elapsed_ms":\s*([\d.]+)', text)  # preflight's own time, interpreter start excluded
    return wall, ru.ru_maxrss / 1024, proc.returncode, (m.group(1) if m else (lines[-1] if lines else ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    walls: dict[str, list[float]] = {k: [] for k in CASES}
    rss: dict[str, list[float]] = {k: [] for k in CASES}
    last: dict[str, tuple[int, str]] = {}
    inner: dict[str, list[float]] = {k: [] for k in CASES}
    for i in range(args.repeat):
        for name, argv in CASES.items():  # alternate so both see the same machine load
            wall, peak, rc, tail = run_measured(argv)
            walls[name].append(wall)
            rss[name].append(peak)
            last[name] = (rc, tail)
            if re.fullmatch(r"[\d.]+", tail):
                inner[name].append(float(tail))
            print(f"[{i + 1}/{args.repeat}] {name}: {wall:.2f} s, {peak:.0f} MiB, rc={rc}", file=sys.stderr)
    ref = statistics.median(walls['python -c "import mindspore; mindspore.run_check()"'])
    rows = []
    for name in CASES:
        med = statistics.median(walls[name])
        inproc = statistics.median(inner[name]) if inner[name] else None
        rows.append(
            f"| {name} | {med:.3f} | {min(walls[name]):.3f} | {max(walls[name]):.3f} | "
            f"{f'{inproc:.0f}' if inproc is not None else '—'} | "
            f"{statistics.median(rss[name]):.0f} | {ref / med:.1f}× | {last[name][0]} |"
        )
    rc_tail = last['python -c "import mindspore; mindspore.run_check()"'][1]
    section = "\n".join([
        HEADING,
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on this machine ({os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, shared by six agents working at the same time: timings are noisy), "
        f"{args.repeat} runs each, alternating, every run a fresh interpreter under `nice -n 10`, wall clock "
        "around the subprocess, peak RSS from `wait4`; in-process ms is preflight's own `elapsed_ms` (collect + rules +",
        "render, interpreter start excluded). `bench/bench_preflight.py`.",
        "",
        "| command | median s | min s | max s | in-process ms | peak RSS MiB | speed-up vs run_check | exit |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"`mindspore.run_check()` last line: `{re.sub(r'[`|]', '', rc_tail)[:200]}`. It imports MindSpore and runs",
        "one multiplication on the device: it proves the install works on this machine but checks no CANN pairing,",
        "no HCCL variable, no rank table and no port. `msdoctor preflight` never imports MindSpore (tested in",
        "tests/preflight/test_cli.py) and checks those from files and the environment.",
        "",
    ])  # fmt: skip
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n\n"
    if HEADING in text:
        start = text.index(HEADING)
        nxt = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + (text[nxt + 1 :] if nxt != -1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text, encoding="utf-8")
    print(section)


if __name__ == "__main__":
    main()
