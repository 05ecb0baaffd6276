"""Argument parsing and dispatch only.

Each command lives in ``msdoctor.commands.<name>`` with ``configure(parser)`` and ``run(args) -> int``;
only the module of the command being run is imported, so ``msdoctor logs`` never loads MindSpore
or Textual. Errors of the :class:`MsDoctorError` hierarchy are printed here, once, on one line.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from msdoctor import __version__
from msdoctor.errors import ExitCode, MsDoctorError

# name -> (module, one-line help). Order is the order of `msdoctor --help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("msdoctor.commands.run", "run your own launch command (msrun, a script, python) under live diagnosis"),
    "preflight": ("msdoctor.commands.preflight", "check the environment, rank table and network before launch"),
    "logs": ("msdoctor.commands.logs", "find the root cause across the logs of all ranks"),
    "analyze": ("msdoctor.commands.analyze", "analyse the profiler output of all ranks"),
    "ckpt": ("msdoctor.commands.ckpt", "compare checkpoints of several ranks (replica drift, naming)"),
    "train": ("msdoctor.commands.train", "run the bundled trainer under msrun with watchdogs"),
    "watch": ("msdoctor.commands.watch", "attach to a run directory and diagnose it live"),
    "report": ("msdoctor.commands.report", "closing report of a finished run"),
    "monitor": ("msdoctor.commands.monitor", "live terminal UI over a run directory"),
    "rules": ("msdoctor.commands.rules", "list the rule catalogue"),
    "explain": ("msdoctor.commands.explain", "show one rule: what, why, confirm, fix, example"),
}


def _available() -> dict[str, tuple[str, str]]:
    return {n: c for n, c in COMMANDS.items() if importlib.util.find_spec(c[0]) is not None}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="msdoctor",
        description="Diagnose distributed MindSpore training: find the fault, name the rank and the evidence.",
    )
    parser.add_argument("--version", action="version", version=f"msdoctor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in _available().items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            importlib.import_module(module_name).configure(p)
    return parser


def _tolerate_narrow_streams() -> None:
    """On a stdout/stderr that is not UTF-8 (``PYTHONIOENCODING=latin-1``, a C locale), write what
    cannot be encoded as ``?`` instead of dying mid-report with UnicodeEncodeError: findings quote
    log lines and use marks (—, →, ×) that such streams cannot hold."""
    for stream in (sys.stdout, sys.stderr):
        enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if enc != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _tolerate_narrow_streams()
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    if command is None:
        args = parser.parse_args(argv)  # handles --help / --version
        parser.print_help(sys.stderr)
        return int(ExitCode.INPUT)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors are exit 2, --help is 0
        return int(exc.code or 0)
    module = importlib.import_module(COMMANDS[args.command][0])
    try:
        return int(module.run(args))
    except MsDoctorError as err:
        print(f"msdoctor {args.command}: {err}", file=sys.stderr)
        return int(err.exit_code)
    except KeyboardInterrupt:
        print(f"msdoctor {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
