"""NCCL's INFO lines are not the error of a plain paste: NCCL reports its errors as `NCCL WARN`; its INFO probe of
the optional net plug-in says `cannot open shared object file` on every healthy start (round 78 e, wenet#2511: the
keyword fallback headed ENV099 on it). A rule that knows such a line still reads it, and a WARN line stays an error."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent / "realworld" / "logs"
WENET = next(ROOT.glob("wenet-2511-*")) / "paste.log"


def _findings(tmp_path: Path, text: str) -> tuple[int, list[str]]:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    res = run_cli("logs", "--json", str(log))
    return res.rc, [f["rule"] for f in json.loads(res.out)["findings"]] if res.rc != 2 else []


def test_the_net_plugin_probe_at_info_is_no_error(tmp_path: Path) -> None:
    probe = WENET.read_text(encoding="utf-8").splitlines()[0]
    assert "NCCL INFO NET/Plugin" in probe and "cannot open shared object file" in probe
    rc, rules = _findings(tmp_path, probe + "\n")
    assert not [r for r in rules if r.endswith("099")], rules


def test_a_nccl_warn_line_is_still_read(tmp_path: Path) -> None:
    rc, rules = _findings(tmp_path, "node1:1234:1300 [0] NCCL WARN Connect to 10.0.0.2<45123> failed : "
                                    "Connection refused\n")
    assert rc == 1 and rules, rules
