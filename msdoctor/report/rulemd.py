"""A rule as Markdown: the one rendering that `msdoctor explain`, the generated docs/rules.md and the
monitor's drill-down show (a view, so every layer above the engine may use it)."""

from __future__ import annotations

from msdoctor.engine.catalogue import Rule


def rule_markdown(r: Rule, heading: str = "##") -> str:
    """One rule as Markdown; used by `explain` and by the generated docs/rules.md."""
    parts = [f"{heading} {r.id}: {r.title}", "", f"*{r.severity.value}* · area {r.area} · source {r.source} · {r.kind}", ""]
    for title, body in (
        ("What it detects", r.detects),
        ("Why it happens", r.cause),
        ("How to confirm", r.confirm),
        ("Fix", r.fix),
    ):
        parts += [f"**{title}.** {body.strip()}", ""]
    if r.other_causes:
        parts += [f"**When it is not that.** {r.other_causes}", ""]
    if r.seed_correction:
        row = f" (seed {r.seed})" if r.seed else ""
        parts += [f"**Where the seed article is wrong{row}.** {r.seed_correction.strip()}", ""]
    parts += ["**Example.**", "", "```", r.example.strip(), "```", ""]
    if r.signatures:
        parts += ["**Signatures.**", ""] + [f"- `{s.pattern}`" for s in r.signatures] + [""]
    if r.check:
        params = ", ".join(f"{k}={v!r}" for k, v in r.params.items())
        parts += [f"**Check.** `msdoctor.checks.{r.check}`" + (f" ({params})" if params else ""), ""]
    parts += ["**References.**", ""] + [f"- {ref}" for ref in r.references] + [""]
    return "\n".join(parts)
