"""Launch-environment facts: the variables HCCL, CANN, msrun and MindSpore read.

The environment is the process's own, or a ``KEY=VALUE`` file (``--env-file``) describing the
launch environment of a job (what each rank will see). Only the variables that matter are kept,
so a facts snapshot never carries unrelated secrets from the shell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError
from msdoctor.safeio import MiB, not_regular, read_input

# Prefixes and names preflight reads; everything else in the environment is dropped.
PREFIXES = ("HCCL_", "MS_", "ASCEND_", "GLOG_", "MINDSPORE_")
NAMES = (
    "DEVICE_ID", "RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "LOCAL_RANK_SIZE", "SERVER_ID",
    "LD_LIBRARY_PATH", "PYTHONPATH", "PATH", "TOOLCHAIN_HOME", "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
    "OMP_NUM_THREADS", "LD_PRELOAD",
)  # fmt: skip
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$")


def relevant(name: str) -> bool:
    return name in NAMES or name.startswith(PREFIXES)


def parse_env_text(text: str) -> tuple[dict[str, str], list[int]]:
    """``KEY=VALUE`` lines (``export`` and shell quoting allowed) → variables, skipped line numbers."""
    values: dict[str, str] = {}
    skipped: list[int] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            skipped.append(n)
            continue
        parts = shell_words(m.group(2).strip())
        if parts is None:
            skipped.append(n)
            continue
        values[m.group(1)] = " ".join(parts) if parts else ""
    return values, skipped


_WORD = re.compile(r"""[^\s'"\\#]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.|\s+|#|['"\\]""", re.S)


def shell_words(text: str) -> list[str] | None:
    """The words of a shell assignment's value, as ``shlex.split(text, comments=True)`` gives them, in
    linear time (shlex builds each word a character at a time: a 1 MB value took 45 s). None when a
    quote is not closed."""
    words: list[str] = []
    cur: list[str] = []
    in_word = False
    for m in _WORD.finditer(text):
        tok = m.group(0)
        c = tok[0]
        if c.isspace():
            if in_word:
                words.append("".join(cur))
                cur, in_word = [], False
        elif tok == "#":
            break  # shlex (comments=True) ends the line at a # outside quotes, even inside a word
        elif c == "'" and len(tok) >= 2:
            cur.append(tok[1:-1])
            in_word = True
        elif c == '"' and len(tok) >= 2:
            cur.append(re.sub(r'\\([\\"])', r"\1", tok[1:-1]))
            in_word = True
        elif c in "'\"":
            return None  # unclosed quote
        elif c == "\\":
            if len(tok) == 1:
                return None  # a trailing backslash: shlex says "No escaped character"
            cur.append(tok[1])
            in_word = True
        else:
            cur.append(tok)
            in_word = True
    if in_word:
        words.append("".join(cur))
    return words


def read_env_file(path: str | Path) -> tuple[dict[str, str], list[int]]:
    """An env file named on the command line: unreadable or binary → :class:`InputError` (exit 2)."""
    p = Path(path)
    if not_regular(p) == "no such file":
        raise InputError(f"{p}: no such env file")
    data = read_input(p, "--env-file", cap=16 * MiB)
    if b"\x00" in data:
        raise InputError(f"{p}: binary data, expected KEY=VALUE lines")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text, expected KEY=VALUE lines") from None
    values, skipped = parse_env_text(text)
    if not values and text.strip():
        raise InputError(f"{p}: no KEY=VALUE line found")
    return values, skipped


def collect_env(environ: Mapping[str, str], source: str) -> Facts:
    """``env.vars``: the relevant variables and where they came from (process or a file)."""
    facts = Facts()
    kept = {k: v for k, v in sorted(environ.items()) if relevant(k)}
    facts.set("env.vars", kept, source)
    facts.set("env.source", source, source)
    return facts
