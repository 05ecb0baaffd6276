"""`msdoctor rules`: list the catalogue."""

from __future__ import annotations

import argparse

from msdoctor.engine.catalogue import AREAS, SOURCES, load_catalogue
from msdoctor.errors import UsageError
from msdoctor.report.render import console, print_json


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--area", help=f"only this area ({', '.join(AREAS)})")
    p.add_argument("--source", help=f"only rules over this source ({', '.join(SOURCES)})")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")


def run(args: argparse.Namespace) -> int:
    if args.area and args.area.upper() not in AREAS:
        raise UsageError(f"unknown area {args.area!r}; areas: {', '.join(AREAS)}")
    source = args.source.lower() if args.source else None
    if source and source not in SOURCES:  # else an empty list and exit 0: a typo would read as "no such rules"
        raise UsageError(f"unknown source {args.source!r}; sources: {', '.join(SOURCES)}")
    rules = load_catalogue().select(area=args.area, source=source)
    if args.json:
        print_json({"command": "rules", "rules": [r.to_dict() for r in rules]})
        return 0
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("id", "severity", "source", "title"):
        table.add_column(col)
    for r in rules:
        table.add_row(r.id, r.severity.value, r.source, escape(r.title))
    out = console()
    out.print(table)
    areas = sorted({r.area for r in rules})
    out.print(f"{len(rules)} rules in {len(areas)} areas ({', '.join(areas)})")
    return 0
