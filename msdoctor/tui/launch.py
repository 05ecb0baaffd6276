"""Run a supervisor and the monitor together: ``msdoctor train --tui`` (and ``run --tui``).

The supervisor runs in a background thread, the app in the main thread (Textual needs it for the
terminal). Closing the monitor does not stop supervision: the call then waits for the job, as it
would have without ``--tui``, and returns the supervisor's exit code.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_with_tui(run_dir: Path, supervise: Callable[[], int], ascii_only: bool | None = None,
                 app_factory: Callable[..., Any] | None = None, headless: bool = False) -> int:
    """``supervise()`` in a thread, the monitor over ``run_dir`` in this one; returns supervise's code.

    An exception raised by ``supervise`` is re-raised here, after the monitor closed.
    """
    from msdoctor.tui.app import make_app

    result: dict[str, Any] = {}
    done = threading.Event()
    app = (app_factory or make_app)(Path(run_dir), ascii_only=ascii_terminal() if ascii_only is None else ascii_only)

    def target() -> None:
        try:
            result["rc"] = supervise()
        except BaseException as exc:  # handed to the main thread
            result["exc"] = exc
        finally:
            done.set()
            if app.is_running:
                rc = result.get("rc")
                msg = f"the job ended (exit {rc}); q leaves" if "exc" not in result else \
                    f"supervision stopped: {type(result['exc']).__name__}; q leaves"
                try:
                    app.call_from_thread(app.notify, msg, timeout=30, markup=False)
                except RuntimeError:
                    pass  # the app closed in between

    th = threading.Thread(target=target, name="msdoctor-supervise", daemon=True)
    th.start()
    app.run(headless=headless)
    if not done.is_set():
        print("msdoctor: monitor closed; the job and its supervisor keep running "
              f"(`msdoctor monitor {run_dir}` reopens it)", file=sys.stderr)
    done.wait()
    th.join()
    if "exc" in result:
        raise result["exc"]
    return int(result["rc"])


def ascii_terminal() -> bool:
    """True when stdout cannot show more than ASCII (C/POSIX locale, an ASCII or Latin-1 encoding)."""
    enc = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return enc not in ("utf8", "utf16", "utf32")
