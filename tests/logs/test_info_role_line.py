"""A line that a rule of role "info" reads is not an unrecognised error, whatever its severity.

Round 75 (collector a, nccl-tests#232): an issue title that says a collective `cannot reach` its bandwidth was read
by PERF023 (severity warning, role info: a statement that heads only alone), yet its error words also made it an
unrecognised error, so the keyword fallback headed with COMM099. Only a rule of severity info stopped that; a rule
of role info now does too. The title below is made up in that form (an issue tag, a collective, a statement of
low bandwidth and a word the COMM keywords weigh)."""

from __future__ import annotations

from pathlib import Path

from msdoctor.checks.logs import unclassified_events
from msdoctor.engine.catalogue import load_catalogue
from msdoctor.facts.logs import collect
from tests.conftest import run_cli

TITLE = "[Performance]: NCCL allreduce bandwidth is low on 2 nodes, timeout tuning does not help"


def test_the_info_rules_line_is_no_unrecognised_error(tmp_path: Path) -> None:
    f = tmp_path / "title.log"
    f.write_text(TITLE + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], load_catalogue())
    assert unclassified_events(facts) == []
    r = run_cli("logs", str(f))
    assert "PERF023" in r.out.splitlines()[1] and "COMM099" not in r.out, r.out
