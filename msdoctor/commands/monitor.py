"""`msdoctor monitor RUN`: live terminal UI over a run directory (Textual, imported only here)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from msdoctor.errors import InputError, UsageError


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN", help="run directory (msdoctor train --run-dir, or one with events/)")
    p.add_argument("--poll", type=float, default=0.5, help="seconds between reads of the event files")
    p.add_argument("--replay", type=float, nargs="?", const=10.0, default=None, metavar="SPEED",
                   help="play a finished run back at SPEED times its pace (default 10)")
    p.add_argument("--web", action="store_true",
                   help="serve the monitor to a browser (textual-serve) instead of drawing it in this terminal")
    p.add_argument("--host", default="127.0.0.1", help="with --web: address to listen on (default loopback only)")
    p.add_argument("--port", type=int, default=8000, help="with --web: port (default 8000)")
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
    if args.web:
        return serve(run_dir, args)
    served = "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")  # a browser session started by --web
    if not sys.stdout.isatty() and not served:  # piped or redirected, Textual would stream escape codes until killed
        raise UsageError("stdout is not a terminal; for text use `msdoctor report RUN` or `msdoctor watch RUN --follow`")
    from msdoctor.tui.app import make_app
    from msdoctor.tui.launch import ascii_terminal

    make_app(run_dir, poll_s=args.poll, ascii_only=args.ascii or ascii_terminal(), replay_speed=args.replay).run()
    return 0


def serve(run_dir: Path, args: argparse.Namespace) -> int:
    """``--web``: textual-serve starts one monitor per browser session, with the same options."""
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1..65535, got {args.port}")
    try:
        from textual_serve.server import Server
    except ImportError:
        raise InputError("--web needs textual-serve (pip install textual-serve)") from None
    cmd = [sys.executable, "-m", "msdoctor", "monitor", str(run_dir.resolve()), "--poll", str(args.poll)]
    if args.replay is not None:
        cmd += ["--replay", str(args.replay)]
    if args.ascii:
        cmd.append("--ascii")
    import socket

    with socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET) as probe:
        try:
            probe.bind((args.host, args.port))
        except OSError as exc:
            raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    print(f"msdoctor monitor: serving {run_dir} on http://{args.host}:{args.port} (Ctrl-C stops)", file=sys.stderr)
    Server(shlex.join(cmd), host=args.host, port=args.port, title=f"msdoctor monitor {run_dir.name}").serve()
    return 0
