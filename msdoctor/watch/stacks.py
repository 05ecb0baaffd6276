"""Stacks of a rank taken from outside, without the job's help: py-spy and pystack (ptrace).

``py-spy dump --native --pid PID`` gives each Python thread's Python frames mixed with native ones
(innermost first); ``pystack remote PID --native-all`` also gives threads that never ran Python —
MindSpore's C++ queue thread where a CPU collective waits (checked on MindSpore 2.10, a 2-rank
msrun job whose rank 1 sleeps before the all-reduce: ``CollectiveOpsImpl::AllReduce →
RunRingAllReduce → AbstractNode::CollectiveWait`` on the waiting rank, in a thread py-spy does not
list). Each dump takes 0.1–0.2 s and stops the process only while it is read.

Where ptrace is denied (``kernel.yama.ptrace_scope``, a container without ``CAP_SYS_PTRACE``) both
fail: the result says so and the rank's own faulthandler dump (``RUN/events/rank_R.stack.txt``,
written on the supervisor's SIGUSR1 when the bootstrap runs in the rank) is what remains.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

# A native or Python frame in one of these is a rank waiting for its peers in a collective.
COLLECTIVE_WAIT = re.compile(
    r"CollectiveWait|CollectiveOpsImpl|RunRingAllReduce|RingAllReduce|AllReduce|AllGather|ReduceScatter|"
    r"Broadcast\b|"
    r"HcclAllReduce|HcclAllGather|HcclBroadcast|HcclReduceScatter|Hccl\w*Wait|MsCollective|CollectiveCommunication|comm_ops"
)  # not communication.init(): a rank waiting there builds the cluster, it does not wait in a collective
_SITE = re.compile(r"(?<=\()/\S*?/(?:site|dist)-packages/")  # '(…/site-packages/mindspore/x.py:1)' → '(mindspore/x.py:1)'
_PTRACE_DENIED = re.compile(r"Operation not permitted|Permission denied|EPERM|ptrace", re.I)
# py-spy: 'Thread 13165 (idle): "MainThread"', frames '    func (file:line)' / '    func (lib.so)'
_PYSPY_THREAD = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \((\w+)\)(?:: "(.*)")?')
_PYSPY_FRAME = re.compile(r"^\s{4}(?P<func>.+?) \((?P<loc>[^()]*)\)\s*$")
# pystack: 'Traceback for thread 13168 (python) [] (most recent call last):'
_PYSTACK_THREAD = re.compile(r"^Traceback for thread (\d+) \((.*?)\)")
_PYSTACK_FRAME = re.compile(
    r'^\s+\((?P<kind>C|Python)\) File "(?P<file>[^"]*)", line (?P<line>\d+), in (?P<func>.+?)(?: \((?P<lib>[^()]*)\))?\s*$'
)


@dataclass
class Thread:
    tid: int
    name: str | None
    frames: list[str]  # innermost first: "func (file:line)" for Python, "func [lib]" for native
    python: bool = False  # has Python frames

    @property
    def waits_in_collective(self) -> bool:
        return any(COLLECTIVE_WAIT.search(f) for f in self.frames)


@dataclass
class Dump:
    rank: int
    pid: int
    t: float
    tools: dict[str, str] = field(default_factory=dict)  # tool -> "ok" | why it failed
    threads: list[Thread] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    ptrace_denied: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.threads)

    def main(self) -> Thread | None:
        return next((t for t in self.threads if t.tid == self.pid or t.name == "MainThread"), None)

    def user_threads(self) -> list[Thread]:
        """Threads other than the main one that are inside the job's own Python code."""
        main = self.main()
        return [t for t in self.threads if t is not main and any(is_user(f) for f in t.frames)]

    @property
    def collective_wait(self) -> list[str]:
        """The frames of the first thread that waits in a collective (empty: none does)."""
        for t in self.threads:
            if t.waits_in_collective:
                return t.frames
        return []

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["collective_wait"] = self.collective_wait
        return d


def tool(name: str) -> str | None:
    """The tool next to this interpreter (the venv msdoctor runs in) or on PATH."""
    here = Path(sys.executable).parent / name
    return str(here) if here.is_file() and os.access(here, os.X_OK) else shutil.which(name)


def clean(func: str) -> str:
    """A C++ symbol without its return type and argument list: ``ns::Cls::Method<T>``."""
    depth, cut = 0, len(func)
    for i, c in enumerate(func):  # the argument list is the first '(' outside template brackets
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and i > 0:
            cut = i
            break
    name = func[:cut]
    if " " in name and "::" in name:  # 'bool ns::f<float>' → 'ns::f<float>'
        name = name[name.rfind(" ", 0, name.find("::")) + 1:]
    return name


def is_user(frame: str) -> bool:
    """A Python frame of the job's own code (not the standard library, not an installed package)."""
    m = re.search(r"\((.+):\d+\)$", frame)
    if not m:
        return False
    path = m.group(1)
    if not os.path.isabs(path):  # py-spy prints paths relative to the sys.path entry they were found in
        return not any(os.path.exists(os.path.join(d, path)) for d in _library_dirs()) and not path.startswith("<")
    return not any(x in path for x in ("site-packages", "dist-packages", "/lib/python3", "/msdoctor/watch/", "<frozen"))


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(dict.fromkeys([paths["stdlib"], paths["purelib"], paths["platlib"], *site.getsitepackages(),
                                *[p for p in sys.path if "site-packages" in p]]))


def parse_pyspy(text: str) -> list[Thread]:
    threads: list[Thread] = []
    for line in text.splitlines():
        m = _PYSPY_THREAD.match(line)
        if m:
            tid = int(m.group(1), 16) if m.group(1).startswith("0x") else int(m.group(1))
            threads.append(Thread(tid, m.group(3), []))
            continue
        fm = _PYSPY_FRAME.match(line)
        if fm and threads:
            loc = fm["loc"]
            if re.search(r":\d+$", loc):
                threads[-1].frames.append(f"{fm['func']} ({loc})")
                threads[-1].python = True
            else:
                threads[-1].frames.append(f"{clean(fm['func'])} [{loc}]")
    return threads


def parse_pystack(text: str) -> list[Thread]:
    threads: list[Thread] = []
    for line in text.splitlines():
        m = _PYSTACK_THREAD.match(line)
        if m:
            threads.append(Thread(int(m.group(1)), None if m.group(2) == "python" else m.group(2), []))
            continue
        fm = _PYSTACK_FRAME.match(line)
        if fm and threads:
            if fm["kind"] == "Python":
                threads[-1].frames.append(f"{fm['func']} ({fm['file']}:{fm['line']})")
                threads[-1].python = True
            else:
                threads[-1].frames.append(f"{clean(fm['func'])} [{os.path.basename(fm['lib'] or '?')}]")
    for t in threads:
        t.frames.reverse()  # pystack prints outermost first
    return threads


def _run(argv: Sequence[str], timeout: float) -> tuple[int, str]:
    try:
        res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return -1, str(exc)
    return res.returncode, res.stdout + ("\n" + res.stderr if res.returncode else "")


def dump(rank: int, pid: int, out_dir: Path, timeout: float = 10.0) -> Dump:
    """py-spy and pystack of one process; raw outputs to ``out_dir/rank_R.{pyspy,pystack}.txt``."""
    d = Dump(rank, pid, time.time())
    by_tid: dict[int, Thread] = {}
    for name, argv, parse in (
        ("py-spy", ["dump", "--native", "--pid", str(pid)], parse_pyspy),
        ("pystack", ["remote", str(pid), "--native-all"], parse_pystack),
    ):
        exe = tool(name)
        if exe is None:
            d.tools[name] = f"{name} not installed"
            continue
        rc, text = _run([exe, *argv], timeout)
        path = out_dir / f"rank_{rank}.{name.replace('-', '')}.txt"
        try:
            path.write_text(text)
            d.files.append(str(path))
        except OSError:
            pass
        if rc != 0:
            first = next((ln for ln in text.splitlines() if ln.strip()), f"exit {rc}")
            d.tools[name] = f"failed: {first.strip()[:200]}"
            d.ptrace_denied = d.ptrace_denied or bool(_PTRACE_DENIED.search(text))
            continue
        d.tools[name] = "ok"
        for t in parse(text):
            have = by_tid.get(t.tid)
            # pystack's frames are the fuller (threads without Python, file and line of native code)
            if have is None or name == "pystack":
                if have is not None and t.name is None:
                    t.name = have.name
                by_tid[t.tid] = t
    d.threads = sorted(by_tid.values(), key=lambda t: (t.tid != pid, t.tid))
    return d


def write(dumps: Sequence[Dump], out_dir: Path) -> Path:
    path = out_dir / "outside_stacks.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_bytes(orjson.dumps([d.to_dict() for d in dumps], option=orjson.OPT_INDENT_2))
    os.replace(tmp, path)
    return path


def short(frames: Sequence[str], n: int = 6) -> str:
    """The innermost frames that say something: no libc/libstdc++ plumbing, no unnamed frames."""
    frames = [_SITE.sub("", f) for f in frames]
    keep = [f for f in frames if not re.search(r"\[(libc|libpthread|ld-linux|libstdc\+\+)[^\]]*\]|^0x[0-9a-f]+ |^\?\?\? ", f)]
    return " <- ".join((keep or list(frames))[:n])


def python_frames(frames: Sequence[str]) -> list[str]:
    return [f for f in frames if re.search(r"\(.+:\d+\)$", f)]


def culprits(dumps: Sequence[Dump]) -> list[int] | None:
    """Ranks not in a collective wait while the others are (None: the stacks do not tell)."""
    ok = [d for d in dumps if d.ok]
    if len(ok) < 2 or len(ok) < len(dumps):
        return None
    waiting = {d.rank for d in ok if d.collective_wait}
    free = sorted(d.rank for d in ok if d.rank not in waiting)
    if not waiting or not free:
        return None
    return free
