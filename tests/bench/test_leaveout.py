"""bench/leaveout.py: a case's headline rule and expect.rules switched off, what heads instead is scored."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
_spec = importlib.util.spec_from_file_location("leaveout", ROOT / "bench" / "leaveout.py")
assert _spec and _spec.loader
leaveout = importlib.util.module_from_spec(_spec)
sys.modules["leaveout"] = leaveout  # a dataclass needs its module registered
_spec.loader.exec_module(leaveout)

OOM = "Out of Memory!!! Request memory size: 2147483648B, Memory Statistic: …\n"
RING = ("[ERROR] DISTRIBUTED(8699,7f808e7fd6c0,python):2026-11-29-19:44:04.084.249 [mindspore/ccsrc/cluster/rpc/core/"
        "collective_ops_impl.cc:162] RunRingAllReduce] Ring ReduceScatter wait receiving [1,7] failed.\n")


def _case(root: Path, name: str, log: str, rules: str = "") -> None:
    d = root / name
    d.mkdir()
    (d / "SOURCE.md").write_text("# t\nsource: https://example.org/t\ndate: 2025-01-01\ncause: x\nexpect.category: MEM\n"
                                 + (f"expect.rules: {rules}\n" if rules else ""), encoding="utf-8")
    (d / "log.txt").write_text(log, encoding="utf-8")


def test_judge() -> None:
    assert leaveout.judge("MEM", {"root_cause": {"rule": "MEM001"}}) == ("found", "MEM001")
    assert leaveout.judge("MEM", {"root_cause": {"rule": "COMM001"}}) == ("misleading", "COMM001")
    assert leaveout.judge("MEM", {"findings": [{"rule": "MEM040", "severity": "info"}]}) == ("partial", None)
    assert leaveout.judge("MEM", {"findings": []}) == ("missed", None)


def test_leave_out_two_cases(tmp_path: Path, monkeypatch) -> None:
    _case(tmp_path, "oom-then-ring", OOM + RING, "MEM001")  # with the OOM rule off, the ring failure heads
    _case(tmp_path, "oom-alone", OOM)  # no expect.rules: today's headline is what is switched off
    monkeypatch.setattr(leaveout.realworld, "CORPUS", tmp_path)
    outs = {o.case: o for o in leaveout.measure(leaveout.realworld.cases(), jobs=1)}
    a, b = outs["oom-then-ring"], outs["oom-alone"]
    assert (a.before, a.off, a.status, a.after) == ("MEM001", ["MEM001"], "misleading", "COMM001")
    assert (b.before, b.off) == ("MEM001", ["MEM001"]) and b.status != "misleading"
    text = leaveout.summarise(list(outs.values()))
    assert "1 misleading" in text and "| COMM001 | 1 | MEM:1 | oom-then-ring |" in text
    from msdoctor.engine.catalogue import load_catalogue
    from msdoctor.engine.evaluate import signature_set

    cat = load_catalogue()  # restored after each case
    assert "MEM001" in cat and "MEM001" in {r.id for r, _sg, _a in signature_set(cat).entries}


def test_the_fallbacks_and_code_families_are_never_switched_off(tmp_path: Path, monkeypatch) -> None:
    fam = leaveout._family()
    assert {"NUM030", "ENV050", "ENV099", "ENV097", "DATA099"} <= fam
    # fla-npu-errors-route-replay-… (tests/realworld/logs): a line only the keyword fallback reads (ENV099); a first
    # sighting gets exactly that, so leave-out keeps it and scores it, instead of counting the case as missed
    (tmp_path / "kw").mkdir()
    (tmp_path / "kw" / "SOURCE.md").write_text("# t\nsource: https://example.org/t\ndate: 2025-01-01\ncause: x\n"
                                               "expect.category: ENV\n", encoding="utf-8")
    (tmp_path / "kw" / "paste.log").write_text("asc_opc: command not found\n", encoding="utf-8")
    monkeypatch.setattr(leaveout.realworld, "CORPUS", tmp_path)
    (o,) = leaveout.measure(leaveout.realworld.cases(), jobs=1)
    assert (o.before, o.off, o.status, o.after) == ("ENV099", [], "found", "ENV099")


def test_keep_coded_leaves_on_the_rule_a_documented_code_routes_to(tmp_path: Path, monkeypatch) -> None:
    # a line of tests/rules/fixtures/RT009.log: EI0004 is routed to RT009 by msdoctor/data/cann_codes.toml
    line = "EI0004: The ranktable is invalid,Reason:[The ranktable config devId is inconsistent with the local devId.]\n"
    (tmp_path / "rt").mkdir()
    (tmp_path / "rt" / "SOURCE.md").write_text("# t\nsource: https://example.org/t\ndate: 2025-01-01\ncause: x\n"
                                               "expect.category: RT\n", encoding="utf-8")
    (tmp_path / "rt" / "paste.log").write_text(line, encoding="utf-8")
    assert leaveout.coded_rules(tmp_path / "rt") == frozenset({"RT009"})
    monkeypatch.setattr(leaveout.realworld, "CORPUS", tmp_path)
    (plain,) = leaveout.measure(leaveout.realworld.cases(), jobs=1)
    (kept,) = leaveout.measure(leaveout.realworld.cases(), jobs=1, keep_coded=True)
    assert plain.before == kept.before == "RT009"
    assert plain.off == ["RT009"] and plain.after != "RT009"  # switched off: the code goes to its family's rule
    assert (kept.off, kept.status, kept.after) == ([], "found", "RT009")


def test_a_rule_and_its_twin_are_switched_off_together() -> None:
    # PAR001 and its twin NUM096 read the same lines (NUM where no parallel layout is named): a case headed by one
    # has neither on a first sighting, else the other would head it (a PAR verdict for a NUM case: an artefact)
    leaveout._switch_off(set())
    assert leaveout._with_twins({"NUM096"}) == {"NUM096", "PAR001"}
    assert leaveout._with_twins({"PAR010", "ENV001"}) == {"PAR010", "NUM098", "ENV001"}
    assert leaveout._with_twins({"MEM001"}) == {"MEM001"}
