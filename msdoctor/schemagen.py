"""Regenerate ``msdoctor/data/facts_schema.json`` from real snapshots: ``python -m msdoctor.schemagen --write``.

The shapes (see :mod:`msdoctor.engine.factschema`) are learnt from the rule fixtures and from the
commands' own ``--dump-facts`` of the bundled samples, so they describe what the real collectors write.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from msdoctor.engine.factschema import Shape, learn


def _snapshots_from_fixtures(root: Path) -> Iterable[dict[str, Any]]:
    for f in sorted((root / "tests" / "rules" / "fixtures").glob("*.json")):
        yield json.loads(f.read_text(encoding="utf-8"))


def _snapshots_from_samples(root: Path) -> Iterable[dict[str, Any]]:
    """The commands' own dumps of the bundled samples (real collectors over real inputs)."""
    import contextlib
    import io
    import os
    import tempfile
    from unittest import mock

    from msdoctor.cli import main
    from msdoctor.facts.env import relevant

    runs = [["logs", str(p)] for p in sorted((root / "samples" / "logs").iterdir()) if p.is_dir()]
    runs += [["analyze", str(p)] for p in sorted((root / "samples" / "profiles").iterdir()) if p.is_dir()]
    runs += [["preflight", "--root", str(p)] for p in sorted((root / "samples" / "roots").iterdir()) if p.is_dir()]
    runs += [["preflight", "--rank-table", str(p)] for p in sorted((root / "samples" / "ranktables").glob("*.json"))]
    # preflight keeps the launch variables of this process's environment (msdoctor.facts.env.relevant): the samples are
    # run without those of the shell that regenerates the file (a developer's PYTHONPATH, a CI job's ASCEND_*), so the
    # schema says what the samples hold, not who ran the generator; PATH stays (the commands look programs up in it)
    scrubbed = {k: v for k, v in os.environ.items() if k == "PATH" or not relevant(k)}
    with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, scrubbed, clear=True):
        for i, argv in enumerate(runs):
            out = Path(tmp) / f"{i}.json"
            sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
                main([*argv, "--json", "--dump-facts", str(out)])
            if out.exists():
                yield json.loads(out.read_text(encoding="utf-8"))


def build(root: Path, samples: bool = True) -> dict[str, Shape]:
    shapes: dict[str, Shape] = {}
    sources = list(_snapshots_from_fixtures(root))
    if samples:
        sources += list(_snapshots_from_samples(root))
    for snap in sources:
        for name, entry in (snap.get("facts") or {}).items():
            if isinstance(entry, dict) and "value" in entry:
                shapes[name] = learn(entry["value"], shapes.get(name))
    return dict(sorted(shapes.items()))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parents[1]
    shapes = build(root)
    text = json.dumps(shapes, indent=1, sort_keys=True) + "\n"
    target = root / "msdoctor" / "data" / "facts_schema.json"
    if "--write" in args:
        target.write_text(text, encoding="utf-8")
        print(f"{target}: {len(shapes)} facts")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
