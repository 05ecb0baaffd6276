"""The streaming scanner: no hit lost by the byte pre-filter, de-dup with counts, bad bytes never crash."""

from __future__ import annotations

import re
from pathlib import Path

from msdoctor.commands.logs import signature_findings
from msdoctor.engine.catalogue import load_catalogue
from msdoctor.facts import logscan
from msdoctor.facts.logs import facts_from_scans
from msdoctor.facts.logscan import scan_file, scan_files

FIXTURES = Path(__file__).resolve().parents[1] / "rules" / "fixtures"
NOISE = "[WARNING] DISTRIBUTED(7,7f,python):2026-11-29-10:00:00.000.000 [x/y.cc:1] F] nothing to see here"


def _ruleid_lines() -> list[tuple[str, str]]:
    out = []
    for path in sorted(FIXTURES.glob("*.log")):
        pending = None
        for line in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^#\s*ruleid:\s*([A-Z]+\d{3,4})\s*$", line)
            if m:
                pending = m.group(1)
                continue
            if pending:
                out.append((pending, line))
                pending = None
    return out


def test_prefilter_keeps_every_signature_hit(tmp_path, spec):
    """Every `# ruleid:` fixture line of the whole catalogue, buried in noise, is found by the byte scan."""
    cases = [(rid, line) for rid, line in _ruleid_lines() if (r := load_catalogue().get(rid)) and r.kind == "signature"]
    assert len(cases) > 50
    f = tmp_path / "all.log"
    f.write_text("\n".join(f"{NOISE}\n{line}" for _, line in cases) + "\n", encoding="utf-8")
    res = scan_file(str(f), spec)
    found = set(res["hits"]) | ({res["progress"]["last"]["rule"]} if res["progress"]["last"] else set())
    missed = sorted({rid for rid, _ in cases} - found)
    assert not missed, f"pre-filter dropped the lines of {missed}"


def test_repeated_lines_become_one_finding_with_a_count(tmp_path, spec):
    wait = ("[ERROR] DISTRIBUTED(8699,7f80,python):2026-11-29-19:44:04.084.249 [mindspore/ccsrc/cluster/rpc/core/"
            "collective_ops_impl.cc:162] RunRingAllReduce] Ring ReduceScatter wait receiving [1,{}] failed.")
    f = tmp_path / "worker_0.log"
    f.write_text(NOISE + "\n" + "\n".join(wait.format(i) for i in range(5)) + "\n", encoding="utf-8")
    facts, scan = facts_from_scans([scan_file(str(f), spec)])
    comm001 = [x for x in signature_findings(facts["logs.hits"]) if x.rule == "COMM001"]
    assert len(comm001) == 1 and comm001[0].count == 5 and comm001[0].rank == 0
    assert comm001[0].evidence[0].line == 2 and comm001[0].evidence[0].file == str(f)
    assert facts["logs.ranks"]["0"]["after_progress"][0]["peers"] == [1]


def test_line_numbers_and_progress_across_blocks(tmp_path, spec, monkeypatch):
    """Blocks are cut at newlines: line numbers and the last progress line survive small blocks."""
    monkeypatch.setattr(logscan, "BLOCK", 64)
    lines = [NOISE] * 30 + ["epoch: 1 step: 4, loss is 0.5"] + [NOISE] * 7
    lines.append("[ERROR] KERNEL(1,7f,python):2026-11-29-10:00:09.000.000 [a.cc:89] Launch] AllReduceCPUKernelMod launch failed.")
    f = tmp_path / "worker_2.log"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = scan_file(str(f), spec)
    assert res["lines"] == len(lines)
    assert res["progress"]["last"]["step"] == 4 and res["progress"]["last"]["line"] == 31
    assert res["hits"]["COMM002"]["first"]["line"] == len(lines)
    assert res["progress"]["last"]["ts"] == "2026-11-29-10:00:00.000.000"  # time of the nearest stamped line


def test_binary_truncated_and_mixed_encoding_are_noted_not_fatal(tmp_path, spec):
    binf = tmp_path / "plog-1_2.log"
    binf.write_bytes(bytes(range(256)) * 64 + b"\x00" * 1000)
    trunc = tmp_path / "worker_1.log"
    trunc.write_bytes(b"epoch: 1 step: 1, loss is 0.5\n[ERROR] KERNEL(1,7f,python):2026-11-29-10:00:09.000.000 [a.cc:8")
    mixed = tmp_path / "worker_0.log"
    mixed.write_bytes("[ERROR] ME(1:1,MainProcess):数据集加载失败\n".encode("gb18030") + b"[ERROR] x \xff\xfe bad\n"
                      + b"half \x00\x00 binary line [ERROR]\n" + b"epoch: 1 step: 3, loss is 0.1\n")
    res = {r["path"]: r for r in scan_files([str(binf), str(trunc), str(mixed)], spec)}
    assert res[str(binf)]["readable"] is False
    assert "binary" in res[str(binf)]["skipped"][0]["reason"]
    assert any("truncated" in s["reason"] for s in res[str(trunc)]["skipped"])
    assert res[str(trunc)]["progress"]["last"]["step"] == 1
    reasons = " ".join(s["reason"] for s in res[str(mixed)]["skipped"])
    assert "2 line(s) not UTF-8" in reasons and "1 line(s) with binary content" in reasons
    assert res[str(mixed)]["progress"]["last"]["step"] == 3
    texts = [e["text"] for e in res[str(mixed)]["first_events"]]
    assert any("数据集加载失败" in t for t in texts)  # GB18030 decoded, not mojibake


def test_unreadable_file_is_skipped(tmp_path, spec):
    res = scan_file(str(tmp_path / "gone.log"), spec)
    assert res["readable"] is False and "cannot be read" in res["skipped"][0]["reason"]


def test_gzip_rotated_log(tmp_path, spec):
    import gzip

    f = tmp_path / "worker_3.log.gz"
    with gzip.open(f, "wt", encoding="utf-8") as fh:
        fh.write("epoch: 2 step: 9, loss is 0.25\n")
    assert scan_file(str(f), spec)["progress"]["last"]["step"] == 9


def test_grep_engine_agrees_with_the_python_engine(tmp_path, spec):
    """The grep pre-filter (big files) finds the same hits, lines, progress and times as Python's re."""
    import shutil

    import pytest

    from msdoctor.facts.logscan import ScanSpec

    if shutil.which("grep") is None:
        pytest.skip("grep not installed: the Python engine is the only one")
    from msdoctor.facts.logstate import has_web_copy

    # a web copy's typography (a full-width colon, typographic quotes) sends a file to the Python engine: those
    # fixture lines are read there (test_logs_realpaste.py), the rest must agree between the engines
    cases = [line for _, line in _ruleid_lines() if not has_web_copy(line.encode("utf-8"))]
    body = "\n".join(f"{NOISE}\n{line}" for line in cases)
    body += "\nepoch: 3 step: 12, loss is 0.25\nTraceback (most recent call last):\nRuntimeError: \n" + "-" * 52
    body += "\n- Kernel error:\n" + "-" * 52 + "\nLaunch kernel failed: Default/AllReduce-op0\n"
    f = tmp_path / "worker_0.log"
    f.write_bytes(body.encode("utf-8") + "[ERROR] ME(1:1,MainProcess):数据集加载失败".encode("gb18030"))
    py = scan_file(str(f), ScanSpec(spec.sigs, engine="python"))
    gr = scan_file(str(f), ScanSpec(spec.sigs, grep_min_size=0))
    assert gr.get("engine") == "grep" and "engine" not in py
    assert {k: v["count"] for k, v in gr["hits"].items()} == {k: v["count"] for k, v in py["hits"].items()}
    assert {k: v["first"]["line"] for k, v in gr["hits"].items()} == {k: v["first"]["line"] for k, v in py["hits"].items()}
    for key in ("step", "line", "ts", "text"):
        assert gr["progress"]["last"][key] == py["progress"]["last"][key]
    assert gr["exceptions"] == py["exceptions"] and gr["exceptions"][-1]["sections"]["Kernel error"].startswith("Launch")
    assert gr["last_ts"] == py["last_ts"] and gr["anomalies"] == py["anomalies"]
    assert [s["reason"] for s in gr["skipped"]] == [s["reason"] for s in py["skipped"]]
    assert gr["lines"] == py["lines"] == body.count("\n") + 1


def test_a_hit_is_on_its_own_line_when_the_prefilter_takes_the_newline_before_it(tmp_path, spec):
    """ENV249's pattern opens with `(?:^|\\s)`: in the byte pre-filter that `\\s` takes the newline in front of a
    `FAILED tests/diffusers/…` line. After a line no rule reads, the Python engine read both lines as one and
    gave ENV249 and ENV845 (`'Tensor' object has no attribute 'grad'`) the line above, where the message is not."""
    import shutil

    from msdoctor.facts.logscan import ScanSpec

    sd3 = next(line for rid, line in _ruleid_lines() if rid == "ENV249" and "transformer_sd3.py" in line)
    for nl in ("\n", "\r\n"):
        f = tmp_path / "worker_0.log"
        f.write_text(nl.join([NOISE, sd3, NOISE, sd3, ""]), encoding="utf-8", newline="")
        engines = [ScanSpec(spec.sigs, engine="python")]
        if shutil.which("grep") is not None:
            engines.append(ScanSpec(spec.sigs, grep_min_size=0))
        for sp in engines:
            res = scan_file(str(f), sp)
            for rid in ("ENV249", "ENV845"):
                hit = res["hits"][rid]
                assert (hit["count"], hit["first"]["line"], hit["last"]["line"]) == (2, 2, 4), (sp.engine, rid, nl)
                assert hit["first"]["text"].startswith("FAILED tests/diffusers/"), hit["first"]["text"]
            assert "grad" in res["hits"]["ENV845"]["first"]["text"] and NOISE not in res["hits"]["ENV845"]["first"]["text"]


def test_grep_engine_counts_the_lines_after_the_last_error(tmp_path, spec):
    """grep hands over only the lines it keeps; the file's length is still every line (a paste of an error and
    the version lines under it is 5 lines read, not 1)."""
    import shutil

    import pytest

    from msdoctor.facts.logscan import ScanSpec

    if shutil.which("grep") is None:
        pytest.skip("grep not installed: the Python engine is the only one")
    f = tmp_path / "paste.log"
    f.write_text("RuntimeError: ACL stream synchronize failed, error code:507035\n\nnpu version: 25.2.3\n"
                 "vllm-ascend version: 0.13.0\nTransformers verison 4.57.6\n", encoding="utf-8")
    gr = scan_file(str(f), ScanSpec(spec.sigs, grep_min_size=0))
    assert gr.get("engine") == "grep" and gr["lines"] == 5


def test_signature_set_cache_stays_exact_when_only_digits_differ():
    """Lines with the same digit-free form share cached anchors; digits that matter are still checked."""
    from msdoctor.engine.evaluate import SignatureSet

    sigs = SignatureSet(load_catalogue().select(kind="signature"))
    wait = "[ERROR] DISTRIBUTED(1,7f,python):2026-11-29-10:00:00.000.000 [c.cc:162] R] Ring ReduceScatter wait receiving [{},7] failed."
    assert [(m.rule.id, m.groups["peer"]) for m in sigs.match(wait.format(3))] == [("COMM001", "3")]
    assert [(m.rule.id, m.groups["peer"]) for m in sigs.match(wait.format(12))] == [("COMM001", "12")]
    # an anchor made of digits (errNo codes, EI codes): same digit-free text, different verdicts
    digit_anchored = [a for a in sigs._digit_anchors if a.startswith("errNo[")]
    assert digit_anchored, "the catalogue has errNo anchors"
    line = "[ERROR] HCCL(1,python):2022-12-01-03:02:29.001.104 [hccl_comm.cc:100] {} failed"
    # the first errNo anchor whose rule reads it in this line (an anchor may be longer than the code, with words a
    # rule's regex needs around it: `errNo[0x0000000005000007] hccl`)
    anchor = next((a for a in sorted(digit_anchored) if {m.rule.id for m in sigs.match(line.format(a))}), None)
    assert anchor is not None, digit_anchored
    hit = line.format(anchor)
    miss = hit.replace(anchor, anchor.replace("5", "6"))
    fired = {m.rule.id for m in sigs.match(hit)}
    assert fired and not fired & {m.rule.id for m in sigs.match(miss)}
    assert {m.rule.id for m in sigs.match(hit)} == fired  # served from the cache the second time


def test_a_literal_inside_a_group_anchors_its_signature():
    """A group that must match (not repeated, optional, an alternative or case-insensitive) lends its literals to the
    anchor: ENV299's `\\b(?P<what>\\w*Profil(?:er|ing)\\w*)\\s+… only supports CUDA` had none, joined the byte pre-filter
    whole (without its leading `\\b`) and made it quadratic on a long run of word characters (the fuzz test's 300 KB
    line hung a scan for 60 s)."""
    from msdoctor.engine.evaluate import literal_anchor

    env299 = load_catalogue().get("ENV299")
    assert env299 is not None and literal_anchor(env299.signatures[0].pattern) == "Profil"
    assert literal_anchor(r"ab(?P<x>cd)ef") == "abcdef"  # a group inside a run continues it
    assert literal_anchor(r"(?:abcd)?efg") is None  # an optional group is not mandatory
    assert literal_anchor(r"(?:abcdef|ghijkl)") is None  # nor is one alternative
    assert literal_anchor(r"(?i:abcdef)x") is None  # a case-insensitive literal is no byte anchor


def test_an_alternation_of_messages_is_anchored_by_one_literal_per_alternative():
    """A signature that alternates whole messages had no single anchor: its regex was compiled and run on every line
    of every input (189 of ~3600 signatures). One literal per alternative anchors it: a line holding none of them
    cannot match."""
    from msdoctor.engine.evaluate import literal_anchors

    assert literal_anchors(r"\bfoo bar\b|\bbaz qux\b") == ("baz qux", "foo bar")
    assert literal_anchors(r"\b(?:MUSA error: nope|(?:musa|ix)ErrorNotSupported)\b") == ("ErrorNotSupported", "MUSA error: nope")
    assert literal_anchors(r"\bxy(?:abcd|efgh)\b") == ("abcd", "efgh")  # inside a group every match goes through
    assert literal_anchors(r"abcdef|gh") == ()  # an alternative without a literal of four: none
    assert literal_anchors(r"(?:abcd|efgh)?xy") == ()  # an optional alternation is not mandatory
    assert literal_anchors(r"x(?=abcdef)|ghijk") == ()  # nor is a look-ahead's text
    assert literal_anchors(r"(?i:abcd|efgh)") == ()  # nor a case-insensitive one
    assert literal_anchors(r"abcdefg") == ("abcdefg",)  # a single anchor stays one
    # under a global (?i) only characters without case anchor it; a CJK anchor needs two characters (six bytes)
    assert literal_anchors(r"(?i)GPU[^\n]{0,8}利用率(?:低|为0)|训练[^\n]{0,24}慢") == ("利用率", "训练")
    assert literal_anchors(r"(?i)foo bar") == () and literal_anchors(r"(?i)err: 0x1234") == ("1234",)  # `x` has case
    from msdoctor.engine.evaluate import SignatureSet

    sigs = SignatureSet([r for r in load_catalogue() if r.id == "ENV120"])
    assert not sigs._unanchored and sigs.match("RuntimeError: No XPU devices are available")
    assert sigs.candidates("nothing of it here") == []


def test_the_prefilter_grows_linearly_on_a_long_word_run(spec):
    from tests.logs.linear import best_time

    rx = spec.prefilter
    small, large = best_time(rx.search, b"x" * 8192), best_time(rx.search, b"x" * 65536)
    if large > 0.05:  # CPU time, best of 3: a run preempted on a loaded host is not a super-linear pre-filter
        assert large / max(small, 1e-4) < 24, (small, large)
