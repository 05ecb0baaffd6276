"""msdoctor's bootstrap, put first on the job's PYTHONPATH by ``msdoctor run``.

Python imports ``sitecustomize`` in every interpreter it starts (msrun's launcher, its scheduler,
each rank, helper processes). This one asks :mod:`msdoctor.watch.bootstrap` whether this process is
a rank and, if so, starts its watchdog; then it runs the ``sitecustomize`` it shadows, if any, so a
site's own customisation still happens. It must never stop the process it runs in.
"""

import os
import sys


def _msdoctor_boot() -> None:
    try:
        from msdoctor.watch.bootstrap import activate
    except Exception as exc:  # msdoctor not importable by this interpreter: the job runs unwatched
        if os.environ.get("MSDOCTOR_BOOT_VERBOSE"):
            print(f"msdoctor bootstrap: inactive in pid {os.getpid()} ({exc})", file=sys.stderr)
        return
    try:
        activate()
    except Exception as exc:  # never take the job down
        print(f"msdoctor bootstrap: inactive in pid {os.getpid()} ({type(exc).__name__}: {exc})", file=sys.stderr)


def _chain() -> None:
    """Execute the next ``sitecustomize`` on sys.path (the one this file shadows)."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


_msdoctor_boot()
_chain()
