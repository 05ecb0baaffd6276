"""`msdoctor monitor RUN`: live terminal UI over a run directory (Textual, imported only here)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from msdoctor.errors import InputError, UsageError


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN", help="run directory (msdoctor train --run-dir, or one with events/)")
    p.add_argument("--poll", type=float, default=0.5, help="seconds between reads of the event files")
    p.add_argument("--replay", type=float, nargs="?", const=10.0, default=None, metavar="SPEED",
                   help="play a finished run back at SPEED times its pace (default 10)")
    p.add_argument("--ascii", action="store_true",
                   help="draw with ASCII only (automatic when the terminal's encoding is not UTF-8)")


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise InputError(f"{run_dir}: not a directory (expected a run directory with events/)")
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: no such run directory")
    if not (run_dir / "events").is_dir():
        raise InputError(f"{run_dir}: no events/ folder (is this a msdoctor run directory?)")
    if not args.poll > 0:
        raise UsageError(f"--poll must be positive, got {args.poll}")
    if args.replay is not None and not args.replay > 0:
        raise UsageError(f"--replay speed must be positive, got {args.replay}")
    if not sys.stdout.isatty():  # piped or redirected, Textual would stream escape codes until killed
        raise UsageError("stdout is not a terminal; for text use `msdoctor report RUN` or `msdoctor watch RUN --follow`")
    from msdoctor.tui.app import make_app
    from msdoctor.tui.launch import ascii_terminal

    make_app(run_dir, poll_s=args.poll, ascii_only=args.ascii or ascii_terminal(), replay_speed=args.replay).run()
    return 0
