"""Argument parsing and dispatch only.

Each command lives in ``msdoctor.commands.<name>`` with ``configure(parser)`` and ``run(args) -> int``;
only the module of the command being run is imported, so ``msdoctor logs`` never loads MindSpore
or Textual. Errors of the :class:`MsDoctorError` hierarchy are printed here, once, on one line.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

from msdoctor import __version__
from msdoctor.errors import ExitCode, MsDoctorError
from msdoctor.safeio import printable

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
    parser.add_argument("--debug", action="store_true",
                        help="on an internal error (a bug), show the traceback instead of one line (exit 3)")
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
    # --debug anywhere on the line: an internal error shows its traceback instead of one line.
    debug = "--debug" in argv or os.environ.get("MSDOCTOR_DEBUG") == "1"
    argv = [a for a in argv if a != "--debug"]
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
        print(f"msdoctor {args.command}: {printable(str(err))}", file=sys.stderr)
        return int(err.exit_code)
    except KeyboardInterrupt:
        print(f"msdoctor {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except RecursionError:
        if debug:
            raise
        print(f"msdoctor {args.command}: input nested too deeply to be read (RecursionError)", file=sys.stderr)
        return int(ExitCode.INPUT)
    except ValueError as exc:
        if "integer string conversion" not in str(exc) or debug:
            return _internal(args.command, exc, debug)
        # Python refuses int() of 4,300+ digits (a guard against quadratic conversion): such a number in
        # the input (a rank table, an env file, a snapshot) is the input's fault, not a bug.
        print(f"msdoctor {args.command}: the input holds a number too long to be read "
              f"({printable(str(exc)).split(':')[-1].split(';')[0].strip()})", file=sys.stderr)
        return int(ExitCode.INPUT)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        if getattr(args, "facts", None) and not debug:
            # A replayed snapshot is validated for the shape of each fact, not for every key a view reads:
            # a record missing one (hand-edited, or cut) is the snapshot's fault, said on one line.
            print(f"msdoctor {args.command}: --facts {printable(str(args.facts))}: a fact lacks what msdoctor "
                  f"writes ({type(exc).__name__}: {printable(str(exc))}); not a snapshot msdoctor wrote, "
                  "or edited by hand", file=sys.stderr)
            return int(ExitCode.INPUT)
        return _internal(args.command, exc, debug)
    except Exception as exc:  # a bug: one line that says so, the trace with --debug, its own exit code
        return _internal(args.command, exc, debug)


def _internal(command: str, exc: Exception, debug: bool) -> int:
    """A bug: one line that says so, the trace with --debug, its own exit code."""
    if debug:
        raise exc
    print(f"msdoctor {command}: internal error (a bug in msdoctor, not in your input's diagnosis): "
          f"{type(exc).__name__}: {printable(str(exc))}{_where(exc)}; rerun with --debug for the traceback",
          file=sys.stderr)
    return int(ExitCode.INTERNAL)


def _where(exc: BaseException) -> str:
    """`` at file.py:123`` — the innermost frame of msdoctor's own code in the traceback."""
    tb = exc.__traceback__
    last = ""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "msdoctor" in name:
            last = f" at {os.path.basename(name)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return last


if __name__ == "__main__":
    raise SystemExit(main())
