#!/usr/bin/env python3
"""`msdoctor logs` vs `grep -E` with the same patterns over the same files, in the same run.

For each input size a synthetic msrun tree (samples/logs/gen_cluster.py: one stopped rank among floods
of consequence errors, noise, a binary file, a truncated log) is generated into a temp folder; then, in
alternation, each command runs as a fresh process:

* ``grep -r -a -E -f PATTERNS DIR > FILE`` — PATTERNS are the line pre-filter msdoctor itself uses (every
  signature's literal anchor, the few unanchored signatures translated to ERE, the generic error markers);
  the matching lines go to a file (grep stops early when writing to /dev/null);
* ``msdoctor logs DIR --json`` (auto engine: grep as pre-filter, then parsing, correlation, verdict);
* ``msdoctor logs DIR --json --engine python`` (Python's re only, for machines without grep).

Wall time is the minimum over the runs, throughput = bytes / wall, peak RSS = the largest VmHWM among the
command's processes (msdoctor: main process and scanning workers), polled every 10 ms. Results go to the section
``## msdoctor logs vs grep -E`` of bench/RESULTS.md.

    .venv/bin/python bench/bench_logs.py [--noise 90 360] [--runs 2] [--no-python-engine]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## msdoctor logs vs grep -E"


def _hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run_measured(cmd: list[str], stdout_path: str) -> tuple[float, float, int]:
    """Wall seconds, peak RSS MiB of the largest process of the tree, exit code.

    RSS is polled from /proc/PID/status VmHWM (the high-water mark of the process's own address space):
    ``wait4``'s ru_maxrss would carry over the forking parent's peak across exec.
    """
    import psutil

    peak: dict[int, int] = {}
    with open(stdout_path, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(["nice", "-n", "10", *cmd], stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT)
        ps = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                pids = [proc.pid] + [c.pid for c in ps.children(recursive=True)]
            except psutil.Error:
                pids = [proc.pid]
            for pid in pids:
                peak[pid] = max(peak.get(pid, 0), _hwm_kib(pid))
            time.sleep(0.01)
        wall = time.perf_counter() - t0
    return wall, max(peak.values(), default=0) / 1024, proc.returncode


def patterns_file(path: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.loggrep import patterns_for
    from msdoctor.facts.logscan import ScanSpec

    pats = patterns_for(ScanSpec(signature_set(load_catalogue())))
    assert pats is not None
    path.write_text("\n".join(pats) + "\n", encoding="utf-8")
    return len(pats)


def tree_bytes(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--noise", type=int, nargs="+", default=[90, 360], help="noise lines per step (sets the size)")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-python-engine", action="store_true", help="skip the slow Python-only engine")
    ap.add_argument("--no-write", action="store_true", help="print, do not update bench/RESULTS.md")
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("gen_cluster", ROOT / "samples" / "logs" / "gen_cluster.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    grep = shutil.which("grep")
    assert grep, "grep is needed for the comparison"
    grep_version = subprocess.run([grep, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    python = sys.executable
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_logs_") as tmp:
        pats = Path(tmp) / "patterns.txt"
        n_pats = patterns_file(pats)
        for noise in a.noise:
            tree = Path(tmp) / f"tree_{noise}"
            info = gen.generate(tree, ranks=a.ranks, steps=a.steps, noise=noise, seed=noise)
            size = tree_bytes(tree)
            cmds = {
                "grep -r -a -E -f PATTERNS": [grep, "-r", "-a", "-E", "-f", str(pats), str(tree)],
                "msdoctor logs --json": [python, "-m", "msdoctor", "logs", str(tree), "--json"],
            }
            if not a.no_python_engine and noise == a.noise[0]:  # slow: the smallest size only
                cmds["msdoctor logs --json --engine python"] = [python, "-m", "msdoctor", "logs", str(tree), "--json", "--engine", "python"]
            best: dict[str, tuple[float, float, int]] = {}
            for round_ in range(a.runs):
                for name, cmd in cmds.items():
                    if round_ and "--engine python" in name:
                        continue  # one run of the slow engine is enough to place it
                    out = str(Path(tmp) / "out.txt")
                    w, rss, rc = run_measured(cmd, out)
                    if name.startswith("msdoctor"):
                        import json

                        rc_rank = json.loads(Path(out).read_text())["root_cause"]["rank"]
                        assert rc_rank == info["culprit"], f"{name}: verdict {rc_rank} != injected {info['culprit']}"
                    prev = best.get(name)
                    best[name] = (min(w, prev[0]) if prev else w, max(rss, prev[1]) if prev else rss, rc)
            grep_w = best["grep -r -a -E -f PATTERNS"][0]
            for name, (w, rss, rc) in best.items():
                rows.append((size, name, w, size / w / 1e6, grep_w / w, rss, rc))
                print(f"{size / 1e6:8.0f} MB  {name:40s} {w:7.2f} s {size / w / 1e6:8.1f} MB/s  {grep_w / w:5.2f}× grep  {rss:7.1f} MiB  rc={rc}", flush=True)
            shutil.rmtree(tree)
    text = render(rows, n_pats, grep_version, a)
    print(text)
    if not a.no_write:
        write_section(ROOT / "bench" / "RESULTS.md", text)


def render(rows: list[tuple[int, str, float, float, float, float, int]], n_pats: int, grep_version: str,
           a: argparse.Namespace) -> str:  # fmt: skip
    lines = [
        SECTION,
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `bench/bench_logs.py` on this machine "
        f"({os.cpu_count()} CPUs, Python {platform.python_version()}, {grep_version}; shared with other agents: timings "
        f"are noisy). Input: `samples/logs/gen_cluster.py` trees of {a.ranks} ranks × {a.steps} steps (one stopped rank, "
        f"consequence floods, noise, a binary file, a truncated log); every msdoctor run's verdict was checked against "
        f"the injected culprit. grep runs with the same {n_pats} pre-filter patterns msdoctor uses, matching lines "
        f"written to a file; min wall of {a.runs} alternating runs under `nice -n 10` (the Python-only engine: one run); peak RSS = the largest VmHWM among the command's processes, polled every 10 ms.",
        "",
        "| input MB | command | wall s | MB/s | throughput vs grep | peak RSS MiB | exit |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for size, name, w, mbs, ratio, rss, rc in rows:
        lines.append(f"| {size / 1e6:.0f} | `{name}` | {w:.2f} | {mbs:.0f} | {ratio:.2f}× | {rss:.0f} | {rc} |")
    return "\n".join(lines) + "\n"


def write_section(path: Path, text: str) -> None:
    """Replace only this benchmark's section (up to the next `## `), or append it."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    new = pattern.sub(lambda _m: text + "\n", old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + text
    path.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
