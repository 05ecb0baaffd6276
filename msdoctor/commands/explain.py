"""`msdoctor explain ID`: render one rule document (the same data as docs/rules.md)."""

from __future__ import annotations

import argparse

from msdoctor.engine.catalogue import Tombstone, load_catalogue
from msdoctor.errors import UsageError
from msdoctor.report.render import console, print_json
from msdoctor.report.rulemd import rule_markdown


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("rule_id", metavar="ID", help="rule id, e.g. COMM001")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")


def tombstone_text(t: Tombstone) -> str:
    """What a retired id was, why it went and what replaces it (one paragraph, plain text)."""
    text = f"{t.id} is retired: {t.title}. {t.retired.strip()}"
    if t.replaced_by:
        text += f"\nReplaced by {t.replaced_by}: see `msdoctor explain {t.replaced_by}`."
    else:
        text += "\nNo rule replaces it."
    return text


def run(args: argparse.Namespace) -> int:
    catalogue = load_catalogue()
    rule = catalogue.get(args.rule_id)
    if rule is None:
        # A retired id stays known: say what it was and what replaced it, not "no rule".
        tomb = catalogue.retired(args.rule_id)
        if tomb is None:
            raise UsageError(f"no rule {args.rule_id!r} (see `msdoctor rules`)")
        if args.json:
            print_json({"command": "explain", "rule": tomb.to_dict()})
        else:
            console().print(tombstone_text(tomb), markup=False, highlight=False)
        return 0
    if args.json:
        print_json({"command": "explain", "rule": rule.to_dict()})
        return 0
    from rich.markdown import Markdown

    console().print(Markdown(rule_markdown(rule, heading="#")))
    return 0
