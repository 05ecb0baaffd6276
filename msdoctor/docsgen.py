"""Render the rule catalogue as one Markdown page (``docs/rules.md``).

``python -m msdoctor.docsgen docs/rules.md`` (``make docs``). The page is generated, never edited by
hand: a test regenerates it and fails when the committed copy is stale, so docs cannot drift from rules.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from msdoctor.engine.catalogue import AREAS, Catalogue, load_catalogue
from msdoctor.report.rulemd import rule_markdown

HEADER = """# msdoctor rule catalogue

Generated from `rules/` by `python -m msdoctor.docsgen docs/rules.md` (`make docs`); do not edit by hand.
`msdoctor explain ID` prints the same text for one rule. Rule-id ranges are described in
`docs/architecture.md`.
"""


def _cell(text: str) -> str:
    # Table cells cannot hold pipes or newlines.
    return " ".join(text.split()).replace("|", "\\|")


def render(catalogue: Catalogue) -> str:
    rules = list(catalogue)
    parts = [HEADER, f"{len(rules)} rules.", ""]
    parts += ["## Index", ""]
    for area, description in AREAS.items():
        in_area = [r for r in rules if r.area == area]
        if not in_area:
            continue
        parts += [f"### {area}: {description}", "", "| id | severity | kind | role | title |", "| --- | --- | --- | --- | --- |"]
        parts += [
            f"| [{r.id}](#{r.id.lower()}) | {r.severity.value} | {r.kind} | {r.role} | {_cell(r.title)} |" for r in in_area
        ]
        parts.append("")
    parts += ["## Rules", ""]
    for r in rules:
        # A plain-id anchor line keeps the index links stable whatever the title says.
        parts += [f'<a id="{r.id.lower()}"></a>', "", rule_markdown(r, heading="###")]
    return "\n".join(parts).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m msdoctor.docsgen OUTPUT.md", file=sys.stderr)
        return 2
    Path(args[0]).write_text(render(load_catalogue()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
