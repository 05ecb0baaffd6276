"""Reliability under hostile input: every reader, many broken inputs, each in its own process.

For each reader, mutations of the bundled real samples (truncation at random offsets, random bytes
spliced in, invalid UTF-8, control characters, a long line, deep nesting, huge numbers) and special
files (FIFO, directory, symlink loop) are given to the command that reads them, as a user would run it
(`python -m msdoctor …`, one process per input). Per reader it counts the inputs, the exit codes, the
tracebacks (exit 3 or a Traceback on stderr), the hangs (no answer within the limit) and the largest
resident set; then the pathological inputs of issue 16 one by one with their time and memory.

    python bench/bench_reliability.py [--per-reader N] [--write]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
FIXTURES = ROOT / "tests" / "rules" / "fixtures"
RESULTS = ROOT / "bench" / "RESULTS.md"
LIMIT_S = 120


def run(argv: list[str], timeout: float = LIMIT_S) -> dict:
    """One command in its own process: exit code, seconds, max RSS (MiB, from wait4), traceback, hang."""
    t = time.monotonic()
    with tempfile.TemporaryFile() as errf:
        proc = subprocess.Popen([sys.executable, "-m", "msdoctor", *argv], stdout=subprocess.DEVNULL,
                                stderr=errf, stdin=subprocess.DEVNULL, cwd=ROOT, start_new_session=True)
        hang = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t > timeout:
                hang = True
                os.killpg(proc.pid, 9)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        text = errf.read().decode("utf-8", "replace")
    return {"rc": proc.returncode, "s": time.monotonic() - t, "rss": usage.ru_maxrss / 1024, "hang": hang,
            "traceback": proc.returncode == 3 or "Traceback" in text, "err": text.strip()[-300:]}


# ---------------------------------------------------------------------------------------------
# Mutations


def mutate_bytes(data: bytes, rnd: random.Random) -> bytes:
    kind = rnd.choice(["truncate", "splice", "utf8", "control", "longline", "random", "dup"])
    at = rnd.randint(0, len(data))
    if kind == "truncate":
        return data[:at]
    if kind == "splice":
        return data[:at] + rnd.randbytes(rnd.randint(1, 300)) + data[at:]
    if kind == "utf8":
        return data[:at] + b"\xff\xfe\xc3\x28\xed\xa0\x80" + data[at:]
    if kind == "control":
        return data[:at] + b"\x1b]0;title\x07\x1b[2J\x00\x9b" + data[at:]
    if kind == "longline":
        return data[:at] + b"A" * rnd.choice([100_000, 2_000_000]) + data[at:]
    if kind == "dup":
        return data[:at] + data + data[at:]
    return rnd.randbytes(rnd.randint(0, 5000))


def mutate_json(data: bytes, rnd: random.Random) -> bytes:
    kind = rnd.choice(["bytes", "bytes", "huge", "deep", "nan", "types", "drop"])
    if kind == "bytes":
        return mutate_bytes(data, rnd)
    text = data.decode("utf-8", "replace")
    if kind == "huge":
        return re.sub(r"\d+", "9" * 5000, text, count=rnd.randint(1, 5)).encode()
    if kind == "deep":
        n = rnd.choice([1000, 100_000])
        return ("[" * n + "]" * n).encode()
    if kind == "nan":
        return re.sub(r"(?<=: )\d+(\.\d+)?", "NaN", text, count=rnd.randint(1, 20)).encode()
    try:
        doc = json.loads(text)
    except ValueError:
        return mutate_bytes(data, rnd)

    def walk(v, depth=0):  # noqa: ANN001, ANN202
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                r = rnd.random()
                if kind == "drop" and r < 0.2:
                    continue
                out[k] = rnd.choice([[], {}, "x", -1, None, True]) if (kind == "types" and r < 0.2) else walk(x, depth + 1)
            return out
        if isinstance(v, list):
            return [walk(x, depth + 1) for x in v]
        return v

    return json.dumps(walk(doc)).encode()


# ---------------------------------------------------------------------------------------------
# Readers: (name, seed file, mutator, how to lay the input out and the argv)


def _profile_rank() -> Path:
    return next((SAMPLES / "profiles" / "cpu_2rank").glob("*_ascend_ms"))


def readers() -> list[tuple[str, Path, object, object]]:
    hang_logs = SAMPLES / "logs" / "hang" / "logs"

    def single(cmd: list[str], name: str):  # noqa: ANN202
        def lay(tmp: Path, data: bytes) -> list[str]:
            f = tmp / name
            f.write_bytes(data)
            return [a.replace("{}", str(f)) for a in cmd]
        return lay

    def log_dir(tmp: Path, data: bytes) -> list[str]:
        d = tmp / "logs"
        d.mkdir()
        (d / "worker_0.log").write_bytes(data)
        shutil.copy(hang_logs / "worker_1.log", d / "worker_1.log")
        return ["logs", str(d), "--json"]

    def profile(filename_glob: str):  # noqa: ANN202
        def lay(tmp: Path, data: bytes) -> list[str]:
            dst = tmp / "prof" / _profile_rank().name
            shutil.copytree(_profile_rank(), dst)
            next(dst.rglob(filename_glob)).write_bytes(data)
            return ["analyze", str(tmp / "prof"), "--json"]
        return lay

    out = [
        ("rank table", SAMPLES / "ranktables" / "good_2x8.json", mutate_json,
         single(["preflight", "--rank-table", "{}", "--json"], "rt.json")),
        ("env file", None, mutate_bytes, single(["preflight", "--env-file", "{}", "--json"], "launch.env")),
        ("worker log", hang_logs / "worker_0.log", mutate_bytes, log_dir),
        ("trace_view.json", _profile_rank() / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", mutate_json,
         profile("trace_view.json")),
        ("cpu_op csv", next(_profile_rank().glob("FRAMEWORK/cpu_op_detail_info_*.csv")), mutate_bytes,
         profile("cpu_op_detail_info_*.csv")),
    ]
    for cmd, fixture in (("logs", "COMM501"), ("analyze", "PERF301"), ("ckpt", "CKPT601"), ("preflight", "ENV101")):
        out.append((f"{cmd} --facts", FIXTURES / f"{fixture}.fire.json", mutate_json,
                    single([cmd, "--facts", "{}", "--json"], "facts.json")))
    out.append(("checkpoint", None, mutate_bytes, single(["ckpt", "{}", "--json"], "rank_0.ckpt")))
    return out


ENV_SEED = b"export HCCL_CONNECT_TIMEOUT=600\nMS_WORKER_NUM=2\nHCCL_IF_IP='10.0.0.1'\n"


def special_files(tmp: Path) -> list[tuple[str, list[str]]]:
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    loop = tmp / "loop"
    loop.symlink_to(loop)
    d = tmp / "dir"
    d.mkdir()
    cases = []
    for what, p in (("FIFO", fifo), ("symlink loop", loop), ("directory", d)):
        for cmd, opt in (("preflight", "--rank-table"), ("preflight", "--env-file"), ("logs", "--facts"),
                         ("analyze", "--facts"), ("ckpt", "--facts")):
            cases.append((f"{what} as {cmd} {opt}", [cmd, opt, str(p), "--json"]))
        cases.append((f"{what} as logs input", ["logs", str(p), "--json"]))
        cases.append((f"{what} as ckpt input", ["ckpt", str(p), "--json"]))
    return cases


def pathological(tmp: Path) -> list[tuple[str, list[str]]]:
    cases = []
    big = tmp / "oneline" / "worker_0.log"
    big.parent.mkdir()
    with big.open("wb") as f:
        for _ in range(200):
            f.write(b"x" * (1 << 20))  # 200 MiB, no newline
    cases.append(("200 MiB log line without a newline", ["logs", str(big.parent), "--json"]))
    bomb = tmp / "bomb" / "worker_0.log.gz"
    bomb.parent.mkdir()
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        for _ in range(300):
            f.write(b"y" * (1 << 20))  # 300 MiB of one line, ~300 KB compressed
    cases.append(("gzip bomb: 300 MiB single line", ["logs", str(bomb.parent), "--json"]))
    slow = tmp / "comm005" / "scheduler.log"
    slow.parent.mkdir()
    slow.write_bytes(b"a" * 65536 + b" is the first one timed out\n")
    cases.append(("64 KiB line before COMM005's anchor", ["logs", str(slow.parent), "--json"]))
    env = tmp / "big.env"
    env.write_bytes(b"HCCL_X='" + b"a b" * 350_000 + b"'\n")
    cases.append(("--env-file with a 1 MB value", ["preflight", "--env-file", str(env), "--json"]))
    rt = tmp / "huge.json"
    rt.write_text('{"status": "completed", "version": "1.0", "server_count": ' + "9" * 5000 + ', "server_list": []}')
    cases.append(("rank table with a 5,000-digit integer", ["preflight", "--rank-table", str(rt), "--json"]))
    deep = tmp / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    cases.append(("facts snapshot nested 100,000 deep", ["logs", "--facts", str(deep), "--json"]))
    ctl = tmp / "ctl" / "worker_0.log"
    ctl.parent.mkdir()
    ctl.write_bytes(b"\x1b]0;pwned\x07\x1b[2J RuntimeError: Out of Memory!!! [/x]\n")
    cases.append(("OSC title-set and clear-screen in a log line", ["logs", str(ctl.parent)]))
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-reader", type=int, default=20)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args(argv)
    rnd = random.Random(args.seed)
    rows, problems = [], []
    with tempfile.TemporaryDirectory(prefix="msdoctor-rel-") as tmpd:
        tmp = Path(tmpd)
        for name, seed, mutator, lay in readers():
            data0 = seed.read_bytes() if seed else ENV_SEED
            rcs: Counter[int] = Counter()
            tb = hangs = 0
            rss = secs = 0.0
            for i in range(args.per_reader):
                case = tmp / f"{name.replace(' ', '_')}-{i}"
                case.mkdir()
                argv_ = lay(case, mutator(data0, rnd))  # type: ignore[operator]
                r = run(argv_)
                rcs[r["rc"]] += 1
                tb += r["traceback"]
                hangs += r["hang"]
                rss, secs = max(rss, r["rss"]), max(secs, r["s"])
                if r["traceback"] or r["hang"]:
                    problems.append(f"{name} #{i}: rc {r['rc']} {r['err'][-160:]}")
                shutil.rmtree(case, ignore_errors=True)
            rows.append((name, args.per_reader, dict(sorted(rcs.items())), tb, hangs, secs, rss))
            print(rows[-1], flush=True)
        specials = []
        for label, argv_ in special_files(tmp):
            r = run(argv_, timeout=30)
            specials.append((label, r))
            if r["traceback"] or r["hang"]:
                problems.append(f"{label}: rc {r['rc']} hang={r['hang']} {r['err'][-160:]}")
        patho = []
        for label, argv_ in pathological(tmp):
            r = run(argv_)
            patho.append((label, r))
            print(label, r["rc"], f"{r['s']:.1f} s", f"{r['rss']:.0f} MiB", r["err"][-120:], flush=True)
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine, `python bench/bench_reliability.py "
        f"--per-reader {args.per_reader}` (seed {args.seed}); each input is one `python -m msdoctor …` process.",
        "",
        "| reader | inputs | exit codes | tracebacks | hangs | slowest | max RSS (MiB) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, n, rcs_, tb, hangs, secs, rss in rows:
        lines.append(f"| {name} | {n} | {rcs_} | {tb} | {hangs} | {secs:.1f} s | {rss:.0f} |")
    n_sp = len(specials)
    bad_sp = sum(1 for _, r in specials if r["traceback"] or r["hang"])
    lines += ["", f"Special files in place of an input (FIFO, symlink loop, directory × {n_sp // 3} options): "
              f"{n_sp} runs, {bad_sp} traceback or hang; exit codes "
              f"{dict(Counter(r['rc'] for _, r in specials))}.", "",
              "| pathological input | exit | time | max RSS (MiB) | what it said |", "| --- | ---: | ---: | ---: | --- |"]
    for label, r in patho:
        said = (r["err"].splitlines() or [""])[-1].replace("|", "\\|")[:140]
        lines.append(f"| {label} | {r['rc']}{' (hang)' if r['hang'] else ''} | {r['s']:.1f} s | {r['rss']:.0f} | {said} |")
    if problems:
        lines += ["", "Problems found:", *[f"- {p}" for p in problems]]
    text = "\n".join(lines)
    print(text)
    if args.write:
        head = "## Reliability (`bench/bench_reliability.py`)"
        old = RESULTS.read_text(encoding="utf-8")
        body = f"{head}\n\n{text}\n"
        pat = re.compile(re.escape(head) + r".*?(?=\n## |\Z)", re.S)
        RESULTS.write_text(pat.sub(body.rstrip("\n"), old) if pat.search(old) else old.rstrip("\n") + "\n\n" + body,
                           encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
