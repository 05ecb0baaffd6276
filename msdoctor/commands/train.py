"""`msdoctor train`: validate the config through the rules, launch the bundled trainer under msrun, supervise it.

The config is judged first (``config.*`` facts, PAR4xx rules): an error finding stops the launch.
Then the corpus is written to MindRecord, msrun starts ``--workers`` ranks on this host with real
CPU collectives, and :func:`msdoctor.watch.supervisor.supervise` waits on the job while the
watchdogs' event streams are diagnosed. MindSpore is never imported in this process.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from msdoctor.cache import cache_root
from msdoctor.errors import ExitCode, InputError, UsageError

# msrun's scheduler declares a worker dead after this many seconds without a heartbeat
# (MS_NODE_TIMEOUT). With a hung rank the peer blocks in its ring all-reduce; the job ends when the
# scheduler times the hung node out and msrun tears the job down.
DEFAULT_COLLECTIVE_TIMEOUT = 30


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=2, metavar="N",
                   help="ranks on this host (msrun --worker_num = --local_worker_num; default 2)")
    p.add_argument("--steps", type=int, default=10, help="optimizer steps (default 10)")
    p.add_argument("--inject", action="append", default=[], metavar="KIND[:k=v,…]",
                   help="reproduce a fault: nan, hang, straggler, shape, desync-layernorm, seed-mismatch, "
                        "data-stall, mem-leak, crash (repeatable)")
    p.add_argument("--run-dir", help="where logs/, events/, ckpt/ and run.json go (default ./msdoctor-runs/<time>)")
    p.add_argument("--config", default="tiny", help="tiny | 7b | a TOML/JSON file (default tiny)")
    p.add_argument("--corpus", help="directory of *.txt (default: the bundled samples/corpus)")
    p.add_argument("--profile", nargs="?", const="2-3", default="", metavar="START-STOP",
                   help="capture steps START-STOP with mindspore.Profiler into RUN/profile (default 2-3)")
    p.add_argument("--save-every", type=int, metavar="K", help="checkpoint every K steps (overrides the config)")
    p.add_argument("--checksum-every", type=int, default=5, metavar="K",
                   help="parameter checksums every K steps (and step 0; default 5)")
    p.add_argument("--resume", action="store_true", help="continue RUN from its latest checkpoint")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="kill the job after S seconds")
    p.add_argument("--collective-timeout", type=int, default=DEFAULT_COLLECTIVE_TIMEOUT, metavar="S",
                   help="seconds a rank waits in a CPU collective for a silent peer, and the scheduler "
                        "before it declares a rank dead (MS_NODE_TIMEOUT, MS_CPU_COMM_OP_TIMEOUT; "
                        f"default {DEFAULT_COLLECTIVE_TIMEOUT})")
    p.add_argument("--on-finding", metavar="CMD", help="shell command fed each finding as JSON on stdin")
    p.add_argument("--stop-on-hang", action="store_true",
                   help="stop the job once a hung rank is named and its stack dumped, instead of waiting "
                        "for the framework's own collective timeout")
    p.add_argument("--master-port", type=int, metavar="P", help="msrun --master_port (default: a free port)")
    p.add_argument("--validate-only", action="store_true", help="judge the config, launch nothing")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("--tui", action="store_true",
                   help="watch the run in the terminal UI (msdoctor monitor); closing it leaves the job running")


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[:2])
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    """A port msrun's scheduler can listen on: bindable now and outside the kernel's ephemeral range.

    A port the kernel hands out for ``bind(0)`` comes from the ephemeral range, the same range every outgoing
    connection on the host takes its source port from: between this check and msrun's own bind another
    process's connection can take it (a resumed e2e run failed once on a busy CI host; its log kept no cause, and
    this race is the candidate that fits). Ports below the range are only ever taken by a listener that asked for
    them."""
    import random

    lo, _hi = _ephemeral_range()
    candidates = list(range(20000, lo)) if lo > 20100 else []
    for port in random.sample(candidates, min(len(candidates), 50)):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _validate(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """Parse config and injections (bad input: exit 2) and judge the config with the PAR4xx rules."""
    from msdoctor_trainer.config import ConfigError, load_config
    from msdoctor_trainer.inject import InjectError, Injections

    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import run_checks
    from msdoctor.facts.config import collect_config

    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    if args.checksum_every < 1:
        raise UsageError(f"--checksum-every must be at least 1, got {args.checksum_every}")
    if args.timeout is not None and not args.timeout > 0:  # else the job is launched and killed at once
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    if args.collective_timeout < 1:
        raise UsageError(f"--collective-timeout must be at least 1 s, got {args.collective_timeout}")
    if getattr(args, "tui", False) and (args.json or not sys.stdout.isatty()):
        raise UsageError("--tui needs a terminal on stdout (and no --json); use `msdoctor monitor RUN` elsewhere")
    try:
        injections = Injections(args.inject)
        injections.validate_world(args.workers)
    except InjectError as exc:
        raise UsageError(str(exc)) from None
    spec = args.config
    if args.resume and args.run_dir and (Path(args.run_dir) / "config.json").is_file():
        spec = str(Path(args.run_dir) / "config.json")  # a resumed run keeps the config it started with
    try:
        cfg = load_config(spec, args.workers)
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    if args.save_every is not None:
        if args.save_every < 1:
            raise UsageError(f"--save-every must be at least 1, got {args.save_every}")
        cfg.train.save_every = args.save_every
    if args.profile:
        a, _, b = args.profile.partition("-")
        if not (a.isdigit() and (not b or b.isdigit())) or int(b or a) < int(a):
            raise UsageError(f"--profile {args.profile!r}: expected START-STOP step numbers")
    facts = collect_config(cfg.to_dict(), args.workers, "CPU", origin=args.config)
    ev = run_checks(load_catalogue().select(source="config"), facts)
    return cfg, injections, ev


def _run_dir(args: argparse.Namespace) -> Path:
    if args.run_dir:
        run = Path(args.run_dir)
    elif args.resume:
        raise UsageError("--resume needs the --run-dir of the run to continue")
    else:
        # The name has 1 s resolution: claim it with an exclusive mkdir so that two runs started in
        # the same second (a script, a test loop) get run-…-2 instead of sharing or refusing one.
        base = Path("msdoctor-runs") / time.strftime("run-%Y%m%d-%H%M%S")
        base.parent.mkdir(parents=True, exist_ok=True)
        for i in itertools.count(1):
            run = base if i == 1 else base.with_name(f"{base.name}-{i}")
            try:
                run.mkdir()
                break
            except FileExistsError:
                continue
    if run.exists() and not run.is_dir():
        raise InputError(f"{run}: exists and is not a directory")
    if (run / "run.json").exists() and not args.resume:
        raise UsageError(f"{run} already holds a run; pass --resume to continue it or choose another --run-dir")
    if args.resume and not (run / "run.json").exists():
        raise InputError(f"{run}: no run to resume (no run.json)")
    for sub in ("logs", "events", "ckpt"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    return run


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    os.replace(tmp, path)


def _child_env(args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    # msrun starts workers as `python script.py`: this interpreter's directory must come first.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    # The CPU ring all-reduce gives up after the lower of the two (measured on 2.10.0, see the README
    # of samples/logs); the scheduler declares silent nodes dead after MS_NODE_TIMEOUT.
    env["MS_NODE_TIMEOUT"] = str(args.collective_timeout)
    env["MS_CPU_COMM_OP_TIMEOUT"] = str(args.collective_timeout)
    env.setdefault("GLOG_v", "2")  # MindSpore WARNING and above in the worker logs
    return env


def _cache_root() -> Path:
    return cache_root()


def _prepare_data(cfg: Any, corpus: str | None, env: dict[str, str]) -> Path:
    """The corpus as MindRecord, built once per (corpus files, sequence length) and cached.

    Built in a subprocess (this process never imports MindSpore) into a temporary directory that is
    renamed into place, so concurrent runs never read a half-written file.
    """
    import hashlib

    from msdoctor_trainer.data import DEFAULT_CORPUS, corpus_files

    src = Path(corpus) if corpus else DEFAULT_CORPUS
    if not src.exists():
        raise InputError(f"{src}: no such corpus directory")
    files = corpus_files(src)
    if not files:
        raise InputError(f"{src}: no *.txt corpus files")
    h = hashlib.sha1(f"T{cfg.model.seq_length}".encode())
    for f in files:
        st = f.stat()
        h.update(f"{f.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())
    final = _cache_root() / f"corpus-{h.hexdigest()[:16]}"
    out = final / "corpus.mindrecord"
    if out.exists():
        return out
    tmp = final.parent / f"{final.name}.tmp-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "msdoctor_trainer.data", "--out", str(tmp / "corpus.mindrecord"),
           "--seq-length", str(cfg.model.seq_length), "--corpus", str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"cannot prepare the corpus: {last}")
    try:
        os.rename(tmp, final)
    except OSError:  # another run finished the same cache entry first: use theirs
        shutil.rmtree(tmp, ignore_errors=True)
    return out


class _ChildTracker:
    """Remembers every process msrun spawns (by pid and start time) so none outlives the job.

    Workers run in their own process groups; if msrun is killed (``--timeout``) they would be
    orphaned, so after the job we end exactly the processes recorded here that are still alive.
    """

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        import psutil

        while not self._stop.wait(0.5):
            try:
                for c in psutil.Process(self.root_pid).children(recursive=True):
                    self.seen.setdefault(c.pid, c.create_time())
            except psutil.Error:
                return

    def kill_leftovers(self) -> list[int]:
        import psutil

        self._stop.set()
        self._thread.join(timeout=2)
        killed = []
        for pid, created in self.seen.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.is_running():
                    p.send_signal(signal.SIGKILL)
                    killed.append(pid)
            except psutil.Error:
                continue
        return killed


def _wait(proc: subprocess.Popen[bytes], timeout: float | None, started: float) -> int:
    """Wait for the job without the supervisor; 124 when ``timeout`` (from ``started``) ran out."""
    left = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
    try:
        return int(proc.wait(timeout=left))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return 124


def _summary(run: Path, world: int) -> dict[str, Any]:
    from msdoctor import rundir as events

    ranks: dict[int, dict[str, Any]] = {}
    for ev in events.read_all(run):
        r = ev.get("rank")
        if not isinstance(r, int):
            continue
        info = ranks.setdefault(r, {"steps": 0, "first_loss": None, "last_loss": None, "status": None})
        if ev.get("kind") == "step":
            info["steps"] = max(info["steps"], int(ev.get("step") or 0))
            if info["first_loss"] is None:
                info["first_loss"] = ev.get("loss")
            info["last_loss"] = ev.get("loss")
        elif ev.get("kind") == "end":
            info["status"] = ev.get("status")
        elif ev.get("kind") == "exception":
            first_line = (str(ev.get("message") or "").splitlines() or [""])[0]
            info["exception"] = f"{ev.get('type')}: {first_line[:200]}"
    return {str(r): ranks.get(r, {"steps": 0, "status": None}) for r in range(world)}


def _findings(run: Path) -> list[Any]:
    # the closing verdict, as `msdoctor report RUN` gives it (what the supervisor named, kept); read
    # from the events, not only from findings.jsonl, which a full disk may have left unwritten
    from msdoctor.errors import InputError
    from msdoctor.watch.report import diagnose_dir, live_findings

    try:
        return diagnose_dir(run).findings
    except InputError:
        return live_findings(run)


def run(args: argparse.Namespace) -> int:
    from msdoctor.report.render import json_payload, print_json, render_findings

    cfg, injections, ev = _validate(args)
    if ev.findings or args.validate_only:
        if args.json:
            print_json(json_payload("train", ev.findings, ev.not_evaluated, launched=False, config=cfg.to_dict()))
        else:
            render_findings(ev.findings, ev.not_evaluated)
        if ev.findings and any(f.severity.value == "error" for f in ev.findings):
            if not args.json:
                print("msdoctor train: the config has errors; nothing was launched", file=sys.stderr)
            return int(ExitCode.FINDINGS)
        if args.validate_only:
            return int(ExitCode.OK)

    run_dir = _run_dir(args)
    env = _child_env(args)
    data = _prepare_data(cfg, args.corpus, env)
    cfg_path = run_dir / "config.json"
    _write_json(cfg_path, cfg.to_dict())
    port = args.master_port or free_port()

    import msdoctor_trainer.train as trainer_script

    script_args = ["--run-dir", str(run_dir.resolve()), "--config-json", str(cfg_path.resolve()),
                   "--data", str(data.resolve()), "--steps", str(args.steps),
                   "--checksum-every", str(args.checksum_every)]
    for spec in injections.specs():
        script_args += ["--inject", spec]
    if args.profile:
        script_args += ["--profile", args.profile]
    if args.resume:
        script_args.append("--resume")
    cmd = [sys.executable, "-m", "mindspore.parallel.cluster.run", f"--worker_num={args.workers}",
           f"--local_worker_num={args.workers}", f"--master_port={port}",
           f"--log_dir={(run_dir / 'logs').resolve()}", "--join=True", trainer_script.__file__, *script_args]
    meta: dict[str, Any] = {
        "argv": sys.argv, "command": cmd, "workers": args.workers, "world_size": args.workers, "steps": args.steps,
        "inject": injections.specs(), "config": cfg.to_dict(), "master_port": port, "resume": args.resume,
        "collective_timeout_s": args.collective_timeout, "data": str(data), "started": time.time(), "status": "running",
    }
    previous = run_dir / "run.json"
    if args.resume and previous.exists():
        try:
            meta["previous"] = orjson.loads(previous.read_bytes())
        except orjson.JSONDecodeError:
            meta["previous"] = None
    _write_json(previous, meta)
    if not args.json:
        print(f"msdoctor train: {args.workers} ranks, {args.steps} steps, run dir {run_dir}"
              + (f", inject {' '.join(injections.specs())}" if injections.items else ""), file=sys.stderr)

    from msdoctor.watch.supervisor import SuperviseOptions, supervise

    with open(run_dir / "msrun.log", "wb") as console_log:
        # under msdoctor.watch.reaper: if this process dies (even by SIGKILL) msrun and its ranks go too
        guarded = [sys.executable, "-m", "msdoctor.watch.reaper", str(os.getpid()), "--run-dir", str(run_dir), "--", *cmd]
        proc = subprocess.Popen(guarded, stdout=console_log, stderr=subprocess.STDOUT, env=env, cwd=run_dir,
                                start_new_session=True)
        tracker = _ChildTracker(proc.pid)
        started = time.monotonic()
        try:
            def _supervise() -> int:
                return supervise(run_dir, proc, args.workers,
                                 SuperviseOptions(timeout_s=args.timeout, on_finding=args.on_finding,
                                                  stop_on_hang=args.stop_on_hang))

            try:
                if args.tui:  # the supervisor in a thread, the monitor here; closing it leaves the job running
                    from msdoctor.tui.launch import run_with_tui

                    rc = run_with_tui(run_dir, _supervise)
                else:
                    rc = _supervise()
            except Exception as exc:  # live diagnosis failing must not take the training job down with it
                meta["supervisor_error"] = f"{type(exc).__name__}: {exc}"
                print(f"msdoctor train: live diagnosis stopped ({meta['supervisor_error']}); "
                      "waiting for the job without it", file=sys.stderr)
                rc = _wait(proc, args.timeout, started)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            leftovers = tracker.kill_leftovers()
    meta.update(ended=time.time(), exit_status=rc, status="ok" if rc == 0 else ("timeout" if rc == 124 else "failed"),
                killed_leftovers=leftovers)
    meta["duration_s"] = round(meta["ended"] - meta["started"], 3)
    _write_json(run_dir / "run.json", meta)

    ranks = _summary(run_dir, args.workers)
    findings = _findings(run_dir)
    if args.json:
        print_json(json_payload("train", findings, ev.not_evaluated, run_dir=str(run_dir), exit_status=rc,
                                status=meta["status"], ranks=ranks, duration_s=meta["duration_s"]))
    else:
        for r, info in ranks.items():
            extra = f"  {info['exception']}" if info.get("exception") else ""
            print(f"rank {r}: {info['steps']} steps, loss {_fmt(info.get('first_loss'))} → "
                  f"{_fmt(info.get('last_loss'))}, {info.get('status') or 'no end event'}{extra}")
        if findings:
            render_findings(findings, [])
        print(f"job {meta['status']} (exit {rc}) after {meta['duration_s']:.1f} s; logs: "
              f"{shlex.quote(str(run_dir / 'logs'))}")
    return int(ExitCode.OK) if rc == 0 else int(ExitCode.FINDINGS)


def _fmt(v: Any) -> str:
    return f"{v:.4f}" if isinstance(v, (int, float)) else "-"
