"""Print how many fuzz cases each reader ran (tests/fuzz/test_fuzz_inputs.py counts them)."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001
    mod = next((m for n, m in list(sys.modules.items()) if n.endswith("test_fuzz_inputs")), None)
    count = getattr(mod, "COUNT", None)
    if count:
        total = sum(count.values())
        terminalreporter.write_line(
            f"fuzz: {total} inputs — " + ", ".join(f"{k} {v}" for k, v in sorted(count.items())))
