"""Engine gaps of the log reader (round 5): an area taken from the catalogue, not from a rule id's letters;
the generic error markers of both scan engines from one table; one choice of the most specific line of a
fault; the rank whose line carries the first error in a file of several ranks; torchrun's failure summary."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from msdoctor.engine.catalogue import load_catalogue
from tests.conftest import run_cli

# -- a rule's area is the catalogue's --------------------------------------------------------------------


def test_area_is_the_catalogues_area_field(monkeypatch):
    from msdoctor.commands import logs as cmd

    for r in list(load_catalogue())[:50]:
        assert cmd._area(r.id) == r.area
    # the catalogue decides, not the letters of the id (a rule filed under another area keeps that area)
    fake = SimpleNamespace(get=lambda rid: SimpleNamespace(area="PAR") if rid == "COMM001" else None)
    monkeypatch.setattr(cmd, "load_catalogue", lambda: fake)
    assert cmd._area("COMM001") == "PAR"
    assert cmd._area("XYZ123") == "" and cmd._area(None) == ""  # an id the catalogue lacks has no area


# -- the generic markers: one table, both engines ---------------------------------------------------------

CORPUS = Path(__file__).resolve().parents[1] / "realworld" / "logs"

# Lines on which the two engines' marker lists used to disagree (grep read `(Error|Exception):` without its
# space and `(Error|Exception).?$` where Python read `\r?$`), beside lines both must take.
EDGE_LINES = [
    b"KeyError:'model.layers.0.weight'",  # no space after the colon: both engines' marker (`OSError:cannot load …`)
    b"no Errors",  # a word that ends in Errors: not a bare exception name
    b"AssertionError",
    b"AssertionError\r",
    b"ValueError: bad value",
    b"torch.OutOfMemoryError:",
    b'  File "/x/train.py", line 12, in main',
    b"[E614 19:45:30.602900611 ProcessGroupNCCL.cpp:1] x",
    b"Cluster is successfully initialized.",
    # a stack dump (py-spy's header and frame, faulthandler's header and time-out line)
    b'Thread 46930 (idle): "MainThread"',
    b"    wait (torch/utils/file_baton.py:42)",
    b"Thread 0x00007f2c3d4f1740 (most recent call first):",
    b"Timeout (0:30:00)!",
]


def _python_lines(data: bytes) -> set[int]:
    from msdoctor.facts.logstate import GENERIC_MARKERS

    rx = re.compile(b"|".join(GENERIC_MARKERS), re.M)
    return {i + 1 for i, line in enumerate(data.split(b"\n")) if rx.search(line)}


def _grep_lines(paths: list[Path]) -> dict[str, set[int]]:
    from msdoctor.facts.loggrep import GENERIC_ERE

    args = ["grep", "-a", "-n", "-H", "-Z", "-E"] + [x for p in GENERIC_ERE for x in ("-e", p)] + ["--"]
    out = subprocess.run(args + [str(p) for p in paths], capture_output=True, env={"LC_ALL": "C"}, check=False).stdout
    found: dict[str, set[int]] = {str(p): set() for p in paths}
    for line in out.splitlines():
        name, _, rest = line.partition(b"\0")
        found[name.decode()].add(int(rest.split(b":", 1)[0]))
    return found


def test_generic_markers_of_both_engines_come_from_one_table():
    from msdoctor.facts.loggrep import GENERIC_ERE, to_ere
    from msdoctor.facts.logstate import GENERIC_MARKER_PATTERNS, GENERIC_MARKERS

    assert len(GENERIC_MARKERS) == len(GENERIC_ERE) == len(GENERIC_MARKER_PATTERNS)
    assert GENERIC_MARKERS == tuple(p.encode() for p in GENERIC_MARKER_PATTERNS)
    assert GENERIC_ERE == tuple(to_ere(p) for p in GENERIC_MARKER_PATTERNS)


def test_any_character_but_a_newline_is_any_character_of_a_line_for_grep():
    from msdoctor.facts.loggrep import to_ere

    # grep reads lines without their newline: `[^\n]` is `.` (it once became `[^]`, which grep refuses)
    assert to_ere(r"is illegal\b[^\n]{0,60}?allocated with") == r"is illegal\b.*allocated with"  # {0,60}: see below
    assert to_ere(r"a[^x\n]b") == "a[^x]b"  # a class with more in it keeps the rest
    assert to_ere(r"\[x\][^\n]") == r"\[x\]."  # an escaped bracket is a literal, not a class


def test_chinese_in_an_unanchored_pattern_is_read_as_bytes_by_grep():
    """grep reads bytes (LC_ALL=C) and a CJK character is three: round 74's PERF025 / PERF056 (`…图模式没有收益`) matched
    a line in Python and not in grep, which read `[^\n，。,]{0,8}` as eight bytes of a byte class, `值?` as an optional
    last byte, and `(?i)` bracketed each CJK character as `[图图]` (one byte of three)."""
    from msdoctor.facts.loggrep import to_ere

    cases = [
        (r"(?i)(?:GPU|NPU|显卡)[^\n，。,]{0,8}?利用率(?:低|为0)", "显卡的利用率低"),
        (r"\b[Ll]oss\s{0,2}值?\s{0,2}(?:变成|为)\s{0,2}(?P<loss>nan|NaN)\b", "loss 为 nan"),
        (r"(?:速度|性能)差|(?i:(?:图模式|graph mode)[^\n，。,；;]{0,12}?没有收益)", "Qwen480B长序列场景FULL_DECODE_ONLY图模式没有收益"),
        (r"(?i:(?:图模式|graph mode)[^\n，。,；;]{0,12}?没有收益)", "GRAPH MODE 没有收益"),
        (r"x[一-鿿]{1,3}y", "x中文y"),
        (r"x[^，。]{0,4}y", "x中文y"),  # a negated class of other characters only: any character
    ]
    for pattern, line in cases:
        assert re.search(pattern, line), pattern
        ere = to_ere(pattern)
        assert ere is not None
        r = subprocess.run(["grep", "-a", "-E", "-c", "-e", ere], input=line.encode("utf-8"), capture_output=True,
                           env={"LC_ALL": "C"}, check=False)  # fmt: skip
        assert r.stdout.strip() == b"1", (pattern, ere, r.stderr)


def test_a_long_bounded_repetition_is_unbounded_for_grep():
    from msdoctor.facts.loggrep import BIG_REPEAT_MIN, to_ere

    # round 60: NUM123's `[^()\n]{0,400}`, ENV233's `{0,200}` … `{1,300}` and a few more unanchored signatures together
    # made grep's DFA explode (79 s on the fixture lines, 0.55 s with this); `*` / `+` match more lines, never fewer
    assert to_ere(r"(?P<case>[A-Z]{1,40}\([^()\n]{0,400}\)):\s{0,4}") == r"([A-Z]+\([^()]*\)):[[:space:]]{0,4}"
    assert to_ere(r"x.{1,300}y") == "x.+y" and to_ere(r"x\d{2,300}y") == "x[0-9]+y"
    n = BIG_REPEAT_MIN - 1
    assert to_ere(rf"x\d{{1,{n}}}y") == f"x[0-9]{{1,{n}}}y"  # short ones stay
    assert to_ere(r"a[{]{0,300}b\{1,300\}") == r"a[{]*b\{1,300\}"  # a brace in a class or escaped is a literal


def test_a_lookbehind_is_dropped_for_grep_like_a_lookahead():
    from msdoctor.facts.loggrep import to_ere

    # MEM044's `(?<!Reason: )[Mm]emory … exhausted` (no literal anchor) once sent every scan to the Python engine:
    # dropped, grep's match is broader and the Python regex still decides
    assert to_ere(r"(?<!Reason: )[Mm]emory is exhausted|resource\[(?!qp\])x") == r"[Mm]emory is exhausted|resource\[x"
    assert to_ere(r"(?<=(a|b))c") is None  # a lookbehind with a group inside is not translated


@pytest.mark.skipif(shutil.which("grep") is None, reason="GNU grep not installed")
def test_the_catalogues_signatures_all_run_in_grep():
    """One signature without an ERE translation (or one grep refuses) sends every log back to the slower Python
    engine: the fast engine must take the whole catalogue."""
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.loggrep import patterns_for, usable
    from msdoctor.facts.logstate import ScanSpec

    spec = ScanSpec(signature_set(load_catalogue()), engine="auto")
    assert patterns_for(spec) is not None
    assert usable(spec) is not None


def test_the_signature_set_and_its_prefilter_are_built_once_per_catalogue():
    """A process that reads many inputs (the corpus in the tests, the TUI, a watchdog) built both again for each
    input, ~0.13 s of its ~0.2 s per pasted excerpt."""
    from msdoctor.engine.catalogue import Catalogue
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.logstate import ScanSpec

    cat = load_catalogue()
    sigs = signature_set(cat)
    assert signature_set(cat) is sigs
    assert ScanSpec(sigs).prefilter is ScanSpec(sigs, engine="python").prefilter
    assert ScanSpec(sigs, paste=True).prefilter is not ScanSpec(sigs).prefilter  # the paste form reads more lines
    assert len(ScanSpec(sigs, paste=True).prefilter.pattern) > len(ScanSpec(sigs).prefilter.pattern)
    other = Catalogue(list(cat)[:10])  # another catalogue has its own set
    assert signature_set(other) is not sigs and len(signature_set(other).entries) < len(sigs.entries)


@pytest.mark.skipif(shutil.which("grep") is None, reason="GNU grep not installed")
def test_a_small_input_is_read_by_python_and_a_big_batch_by_grep(tmp_path):
    """grep compiles the whole catalogue before it reads a byte (a paste's scan: ~0.3 s with grep, ~0.01 s with
    Python, bench/RESULTS.md "msdoctor logs on one paste"): files below grep_min_size in all are read by the
    Python engine, a batch that reaches it by grep, and both give the same findings."""
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.logscan import scan_files
    from msdoctor.facts.logstate import ScanSpec

    sigs = signature_set(load_catalogue())
    line = b"[ERROR] HCCL(1234,python):2024-01-01-00:00:00.000.000 [hccl_communicator.cc:100] EI0006: Getting socket times out.\n"
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"step 1\n" * 80 + line)
    b.write_bytes(b"step 2\n" * 80 + line)
    small = scan_files([str(a)], ScanSpec(sigs))
    assert small[0].get("engine", "python") == "python"
    both = scan_files([str(a), str(b)], ScanSpec(sigs, grep_min_size=a.stat().st_size + 1))  # the two reach it
    assert [r.get("engine") for r in both] == ["grep", "grep"]
    alone = scan_files([str(a)], ScanSpec(sigs, grep_min_size=a.stat().st_size + 1))
    assert alone[0].get("engine", "python") == "python"
    assert small[0]["first_events"][0]["rule"] == both[0]["first_events"][0]["rule"] == "COMM020"
    assert small[0]["first_events"] == both[0]["first_events"]


@pytest.mark.skipif(shutil.which("grep") is None, reason="GNU grep not installed")
def test_generic_markers_select_the_same_lines_in_both_engines(tmp_path):
    """Every line of the real-world corpus (and a few edge lines) is a candidate for both engines or for neither."""
    edge = tmp_path / "edge.log"
    edge.write_bytes(b"\n".join(EDGE_LINES) + b"\n")
    files = [edge] + sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "SOURCE.md")
    assert len(files) > 100
    differ = {}
    grep = _grep_lines(files)
    for f in files:
        py, gr = _python_lines(f.read_bytes()), grep[str(f)]
        if py != gr:
            differ[str(f)] = (sorted(py - gr)[:5], sorted(gr - py)[:5])
    assert not differ, differ
    assert _python_lines(edge.read_bytes()) == {1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}


# -- one tie-break for the most specific line of a fault ------------------------------------------------------

PTOAS_726 = CORPUS / "ptoas-726-syncall-aicore-timeout-507014-2026" / "paste.log"


def test_a_ranks_root_event_and_the_headline_take_the_rule_that_refines_the_block(tmp_path):
    """ptoas#726: one CANN block (one time stamp) holds the generic `there is an exception of aicore error`
    (NUM010) and, lines later, `Kernel task happen error, retCode=0x25, [aicore timeout]` (NUM011). The
    headline already read NUM011; the rank's own root event (what COMM502 names across ranks) read NUM010."""
    from msdoctor.checks.logs import terminal
    from msdoctor.commands.logs import headline_finding, signature_findings
    from msdoctor.facts.logs import collect

    log = tmp_path / "worker_0.log"
    log.write_bytes(PTOAS_726.read_bytes())
    facts, _ = collect([str(tmp_path)])
    rank = facts.get_known("logs.ranks")["0"]
    rules = [e.get("rule") for e in rank["after_progress"] if e.get("role") == "root"]
    assert "NUM010" in rules and "NUM011" in rules and rules.index("NUM010") < rules.index("NUM011")
    state, event = terminal(rank)
    assert state == "root" and event["rule"] == "NUM011"
    head = headline_finding(signature_findings(facts.get_known("logs.hits")))
    assert head is not None and head.rule == event["rule"]


# CANN 6.3.RC2 troubleshooting guide, "Memcpy异步拷贝算子执行报错" (troubleshooting_0110): the model stream's
# 0x91 report comes first, the failed task (an SDMA memory copy) is described after it.
MEMCPY_IN_MODEL_STREAM = Path("tests/realworld/logs/cann-doc-memcpy-async-copy-failed-sdma-ee8888-2023/log.txt")
# CANN 7.0.0 TensorFlow migration guide (tfmigr1_000106): only the 0x91 report, after a shuffle buffer that
# filled too slowly: the wrapper keeps its data-channel reading.
SHUFFLE_0X91 = Path("tests/realworld/logs/cann-doc-tfmigr-shuffle-buffer-too-large-geop-dorunasync-0x91-2023/log.txt")


@pytest.mark.parametrize(("src", "name", "want"), [
    (MEMCPY_IN_MODEL_STREAM, "log.txt", "NUM009"),
    (MEMCPY_IN_MODEL_STREAM, "worker_0.log", "NUM009"),
    (SHUFFLE_0X91, "log.txt", "DATA021"),
])  # fmt: skip
def test_a_model_streams_0x91_report_yields_to_the_failed_tasks_own_report(tmp_path, src, name, want):
    from msdoctor.checks.logs import terminal, yields_to_task
    from msdoctor.commands.logs import headline_finding, signature_findings
    from msdoctor.facts.logs import collect

    assert yields_to_task("DATA021", ["DATA021", "NUM009"]) and not yields_to_task("DATA021", ["COMM036", "NUM030"])
    cons = [{"rule": "DATA021", "role": "consequence"}, {"rule": "NUM009", "role": "consequence"}]
    assert terminal({"after_progress": cons}) == ("consequence", cons[1])
    (tmp_path / name).write_bytes(src.read_bytes())
    facts, _ = collect([str(tmp_path)])
    head = headline_finding(signature_findings(facts.get_known("logs.hits")))
    assert head is not None and head.rule == want
    rank = (facts.get_known("logs.ranks") or {}).get("0")
    if rank is not None:  # the rank's own terminal event: the EE8888 code line (NUM030) is a root there
        state, event = terminal(rank)
        assert event["rule"].startswith(want[:3]) and (want == "DATA021") == (event["rule"] == "DATA021")


# A failing statement (CKPT029, a weight loader's copy) outranks a code family's reading of the exception under it
# (verl#6191: EZ1001 `1536 and 192 cannot broadcast`, NUM030), but yields to another area's specific rule. The two
# lines of the second paste are real lines of two cases put together here (no case holds an OOM inside the copy):
# verl-6191-qwen3-vl-30b-fused-moe-load-w13-inplacecopy-161002-cannot-broadcast-2026 and
# ms-swift-9403-megatron-qwen3-235b-lora-910b4-npu-oom-2026.
VERL_6191 = CORPUS / "verl-6191-qwen3-vl-30b-fused-moe-load-w13-inplacecopy-161002-cannot-broadcast-2026" / "log.txt"
COPY_THEN_OOM = (
    "(vLLMHttpServer pid=443052) (Worker_TP0 pid=443798) ERROR 04-28 20:03:54 [multiproc_executor.py:932]     "
    "expert_data.copy_(loaded_weight)\n"
    "RuntimeError: NPU out of memory. Tried to allocate 26.44 GiB (NPU 2; 60.96 GiB total capacity; 30.23 GiB already "
    "allocated; 30.23 GiB current active; 25.36 GiB free; 33.08 GiB reserved in total by PyT\n"
)


@pytest.mark.parametrize(("text", "want"), [(None, "CKPT029"), (COPY_THEN_OOM, "MEM013")])
def test_a_failing_statement_yields_to_another_areas_specific_rule_only(tmp_path, text, want):
    from msdoctor.checks.logs import terminal, yields_to_task
    from msdoctor.commands.logs import headline_finding, signature_findings
    from msdoctor.facts.logs import collect

    assert yields_to_task("CKPT029", ["CKPT029", "MEM013"])
    assert not yields_to_task("CKPT029", ["CKPT029", "NUM030", "ENV099", "NUM097"])  # a code family, the fallbacks
    (tmp_path / "log.txt").write_text(VERL_6191.read_text(encoding="utf-8") if text is None else text, encoding="utf-8")
    facts, _ = collect([str(tmp_path)])
    head = headline_finding(signature_findings(facts.get_known("logs.hits")))
    assert head is not None and head.rule == want
    roots = [{"rule": "CKPT029", "role": "root", "severity": "error"}, {"rule": "MEM013", "role": "root", "severity": "error"}]
    assert terminal({"after_progress": roots}) == ("root", roots[1])


# -- torchrun's failure summary ------------------------------------------------------------------------------
# Real pastes (no corpus case holds the summary yet): a DeepSpeed/accelerate run on one 6-GPU host whose rank 3
# was SIGKILLed (issue thread of 2023-08-01, host r1n2a6000bittensor), and ROCm/ROCm#5788 (xDiT under torchrun,
# both workers died of SIGSEGV; rank 1 is listed under `Failures:`, rank 0 is the root cause).

ELASTIC_KILL = """\
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 209017) of binary: /usr/bin/python3.10
Traceback (most recent call last):
  File "/home/commune/.local/lib/python3.10/site-packages/torch/distributed/launcher/api.py", line 250, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\x20
=======================================================
train.py FAILED
-------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
-------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2023-08-01_01:11:46
  host      : r1n2a6000bittensor
  rank      : 3 (local_rank: 3)
  exitcode  : -9 (pid: 209017)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 209017
=======================================================
"""

ELASTIC_SEGV = """\
E0115 05:44:28.210000 6139 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -11) local_rank: 0 (pid: 6174) of binary: /venv/bin/python
Traceback (most recent call last):
  File "/venv/lib/python3.12/site-packages/torch/distributed/launcher/api.py", line 293, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
======================================================
run.py FAILED
------------------------------------------------------
Failures:
[1]:
  time      : 2026-01-15_05:44:28
  host      : xdit
  rank      : 1 (local_rank: 1)
  exitcode  : -11 (pid: 6175)
  error_file: <N/A>
  traceback : Signal 11 (SIGSEGV) received by PID 6175
------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-01-15_05:44:28
  host      : xdit
  rank      : 0 (local_rank: 0)
  exitcode  : -11 (pid: 6174)
  error_file: <N/A>
  traceback : Signal 11 (SIGSEGV) received by PID 6174
======================================================
"""


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_torchrun_failure_summary_is_read_into_facts(tmp_path, engine):
    from msdoctor.engine.evaluate import signature_set
    from msdoctor.facts.logscan import ScanSpec, scan_file

    sigs = signature_set(load_catalogue())
    spec = ScanSpec(sigs, engine="python") if engine == "python" else ScanSpec(sigs, grep_min_size=0)
    log = tmp_path / "torchrun.log"
    log.write_text(ELASTIC_SEGV, encoding="utf-8")
    res = scan_file(str(log), spec)
    assert res.get("engine", "python").startswith(engine)
    entries = [{k: e.get(k) for k in ("section", "rank", "local_rank", "host", "exitcode", "pid", "signal", "signal_name")}
               for e in res["elastic"]]  # fmt: skip
    assert entries == [
        {"section": "other", "rank": 1, "local_rank": 1, "host": "xdit", "exitcode": -11, "pid": 6175, "signal": 11,
         "signal_name": "SIGSEGV"},
        {"section": "root", "rank": 0, "local_rank": 0, "host": "xdit", "exitcode": -11, "pid": 6174, "signal": 11,
         "signal_name": "SIGSEGV"},
    ]  # fmt: skip


def test_torchrun_sigkill_root_cause_names_the_rank_and_says_killed(tmp_path):
    """SIGKILL of the first observed failure with no other error: the headline names rank 3 and says killed
    (often host OOM) — before, the only verdict was the ChildFailedError line as an unrecognised error."""
    log = tmp_path / "torchrun.log"
    log.write_text(ELASTIC_KILL, encoding="utf-8")
    r = run_cli("logs", "--json", str(log))
    rc = r.json()["root_cause"]
    assert rc["rule"] == "MEM017" and rc["rank"] == 3, rc
    assert "SIGKILL" in rc["message"] and "killed (often host OOM" in rc["message"]
    assert "local_rank 3" in rc["message"] and "r1n2a6000bittensor" in rc["message"]
    text = run_cli("logs", str(log)).out
    assert "Root cause: rank 3 (MEM017)" in text and "killed (often host OOM" in text


def test_torchrun_summary_gives_the_root_cause_rank_not_the_first_listed_failure(tmp_path):
    """ROCm#5788: rank 1 comes first (under `Failures:`), rank 0 is the first observed failure; SIGSEGV is no
    kill (no MEM017), and the verdict says which rank and which signal. Since round 78 (a) the agent's `failed
    (exitcode: -11)` line is ENV329's (a worker's SIGSEGV the launcher reports); the summary's words go with it."""
    log = tmp_path / "torchrun.log"
    log.write_text(ELASTIC_SEGV, encoding="utf-8")
    out = run_cli("logs", "--json", str(log)).json()
    rc = out["root_cause"]
    assert rc["rank"] == 0 and rc["rule"] == "ENV329", rc
    said = " ".join([rc.get("reason") or "", *rc.get("chain", [])])
    assert "Signal 11 (SIGSEGV)" in said and "rank 0 (local_rank 0) on host xdit" in said, rc
    assert not [f for f in out["findings"] if f["rule"] == "MEM017"]


def test_a_sigkill_row_under_failures_only_is_not_a_kill_finding(tmp_path):
    """torchrun SIGKILLs the surviving workers itself: a -9 row under `Failures:` is no root cause; only the row
    under `Root Cause (first observed failure):` says how the job failed (real rows of the two pastes above)."""
    rows = ELASTIC_KILL.splitlines()
    kill_rows = rows[rows.index("[0]:") : rows.index("[0]:") + 7]
    segv = ELASTIC_SEGV.splitlines()
    at = segv.index("[1]:")
    mixed = segv[:at] + ["[1]:", *kill_rows[1:]] + segv[at + 7 :]
    log = tmp_path / "torchrun.log"
    log.write_text("\n".join(mixed) + "\n", encoding="utf-8")
    out = run_cli("logs", "--json", str(log)).json()
    assert not [f for f in out["findings"] if f["rule"] == "MEM017"]
    assert out["root_cause"]["rank"] == 0


# -- one console of several ranks: the culprit is the rank whose own line holds the error ---------------------

R382 = (CORPUS / "vllm-ascend-382-hccl-watchdog-allreduce-timeout-2025" / "paste.log").read_text(encoding="utf-8")
R393 = (CORPUS / "vllm-ascend-393-atb-selfattention-setup-failed-2025" / "paste.log").read_text(encoding="utf-8")


def test_a_console_of_several_ranks_names_the_rank_with_the_error_not_the_first_rank(tmp_path):
    """Rank 1's HCCL watchdog time-out lines (vllm-ascend#382, lines 1 and 4) come first in the file, then rank
    0's own error (vllm-ascend#393's `[rank0]:[E410 …] setup failed!`). Rank 1 only waited: the culprit is rank
    0. Before, the file was one process and its verdict rank 1's time-out."""
    waits = R382.splitlines()
    error = R393.splitlines()[0]
    log = tmp_path / "console.log"
    log.write_text("\n".join([waits[0], waits[3], error]) + "\n", encoding="utf-8")
    out = run_cli("logs", "--json", str(log)).json()
    rc = out["root_cause"]
    assert rc["rank"] == 0, rc
    assert any("rank 0 failed first" in c for c in rc.get("chain", [])), rc
    assert any("rank(s) 1 only report consequences" in c for c in rc.get("chain", [])), rc


def test_a_console_where_every_rank_reports_the_same_fault_stays_one_file(tmp_path):
    """vllm-ascend#2248: seven ranks each report the same c10d time-out; no rank failed first, the headline stays
    the first line's rule (a console has no time per line to order ranks by)."""
    case = CORPUS / "vllm-ascend-2248-c10d-waitforinput-timeout-multinode-deepseek-2025"
    rc = run_cli("logs", "--json", str(case)).json()["root_cause"]
    assert rc["verdict"] == "first-error" and rc["rule"] == "COMM082" and rc["rank"] == 6, rc


def test_the_rank_that_failed_first_with_an_unknown_error_keeps_the_wording_area(tmp_path):
    """Rank 1's time-outs (vllm-ascend#382) then rank 0's `RuntimeError: createHCCLComm:… HcclGetRootInfo…`
    (vllm-ascend#405), which no rule knows: the culprit is rank 0 and the area its wording's (COMM099), not
    COMM502's id."""
    error = (CORPUS / "vllm-ascend-405-ej0003-port-60000-bound-2025" / "paste.log").read_text(encoding="utf-8")
    waits = R382.splitlines()
    log = tmp_path / "console.log"
    log.write_text("\n".join([waits[0], waits[3], error.splitlines()[0]]) + "\n", encoding="utf-8")
    rc = run_cli("logs", "--json", str(log)).json()["root_cause"]
    assert rc["rank"] == 0 and rc["rule"] == "COMM099" and rc.get("classified_by") == "wording", rc
    assert any("rank 0 failed first" in c for c in rc.get("chain", [])), rc


# A user Python function of the dataset pipeline that raised (DATA011, here the map job's header
# `map operation: [PyFunc] failed.`) is the cause when its exception is the user's own (MindNLP#981: a KeyError
# in the example's merge_and_pad), but yields to a specific rule of another area beside it: MindSpore's FAQ
# case of dvpp ops in a multiprocess map, where the card runs out of memory (MEM002) inside the function.
@pytest.mark.parametrize(("case", "want"), [
    ("mindnlp-981-map-pyfunc-failed-keyerror-invalid-key-tokenized-2024/paste.log", "DATA011"),
    ("mindspore-faq-dvpp-multiprocess-less-than-half-free-memory-2025/log.txt", "MEM002"),
])
def test_a_user_function_wrapper_yields_to_another_areas_specific_rule(tmp_path, case, want):
    from msdoctor.checks.logs import yields_to_task
    from msdoctor.commands.logs import headline_finding, signature_findings
    from msdoctor.facts.logs import collect

    assert yields_to_task("DATA011", ["DATA011", "MEM002"])
    assert not yields_to_task("DATA011", ["DATA011", "DATA040", "ENV099"])  # same area, a fallback
    (tmp_path / "log.txt").write_text((CORPUS / case).read_text(encoding="utf-8"), encoding="utf-8")
    facts, _ = collect([str(tmp_path)])
    head = headline_finding(signature_findings(facts.get_known("logs.hits")))
    assert head is not None and head.rule == want


def test_an_hccl_transport_error_in_the_traceback_of_a_qp_allocation_failure_yields_to_it(tmp_path):
    """vllm-ascend #5993: `Transport init error … creakLink para:rank[15]…dst_rank[1]` under EI0007's
    `Failed to allocate resource[qp] … Memory resources are exhausted` is the consequence, not a link fault."""
    from msdoctor.checks.logs import yields_to_task
    from msdoctor.commands.logs import headline_finding, signature_findings
    from msdoctor.facts.logs import collect

    assert yields_to_task("COMM027", ["COMM027", "COMM044"]) and not yields_to_task("COMM027", ["COMM027", "NUM030"])
    src = Path(__file__).parents[1] / "realworld" / "logs" / "vllm-ascend-5993-2node-a2-dsv31-mtp-quarot-ei0007-qp-exhausted-2026" / "paste.log"
    (tmp_path / "log.txt").write_bytes(src.read_bytes())
    facts, _ = collect([str(tmp_path)])
    head = headline_finding(signature_findings(facts.get_known("logs.hits")))
    assert head is not None and head.rule == "COMM044"


@pytest.mark.parametrize(("case", "want"), [
    ("ptoas-424-tsdopen-tdt-error-34-aclrtsetdevice-507033-ee1001-2026/paste.log", "ENV770"),
    ("ptoas-948-haldeviceopen-drvretcode-7-aclrtsetdevice-507033-2026/paste.log", "ENV701"),
])
def test_a_null_context_error_fetch_yields_to_the_failed_device_open_under_it(tmp_path, case, want):
    """PTOAS #424 / #948: `rtGetDevMsg execution failed, the context is a null pointer` (EE1001, ENV082) is the
    runtime fetching the error message after aclrtSetDevice could not open the device; the TraceBack under it
    says why (TsdOpen failed, ENV770; the driver's halDeviceOpen failed, ENV701). Alone it stays ENV082."""
    from msdoctor.checks.logs import yields_to_task
    from msdoctor.commands.logs import headline_finding, signature_findings
    from msdoctor.facts.logs import collect

    assert yields_to_task("ENV082", ["ENV082", "ENV770"]) and yields_to_task("ENV082", ["ENV082", "ENV701"])
    assert not yields_to_task("ENV082", ["ENV082", "ENV050", "NUM030"])  # a code family does not explain it
    (tmp_path / "log.txt").write_text((CORPUS / case).read_text(encoding="utf-8"), encoding="utf-8")
    facts, _ = collect([str(tmp_path)])
    head = headline_finding(signature_findings(facts.get_known("logs.hits")))
    assert head is not None and head.rule == want


# -- the kubelet's admission error wraps the device plugin's message ------------------------------------------
# `Allocate failed due to rpc error: code = Unknown desc = <message>, which is unexpected` (ENV322) yields to a rule
# that reads the plugin's message itself (ascend-device-plugin #103: `npu-smi … not found in […] or PATH`, ENV056);
# alone (HAMi #654, an annotation with no device UUID) it keeps its reading.
PLUGIN_NPU_SMI = CORPUS / "hami-ascend-device-plugin-103-npu-smi-not-found-device-share-2026" / "log.txt"
PLUGIN_UNKNOWN_UUID = CORPUS / "hami-654-ascend-device-plugin-allocate-parse-pod-annotation-unknown-uuid-istio-sidecar-2024" / "paste.log"


@pytest.mark.parametrize(("src", "want"), [(PLUGIN_NPU_SMI, "ENV056"), (PLUGIN_UNKNOWN_UUID, "ENV322")])
def test_the_kubelets_admission_error_yields_to_the_rule_that_reads_the_plugins_message(tmp_path, src, want):
    from msdoctor.checks.logs import yields_to_task
    from msdoctor.commands.logs import headline_finding, signature_findings
    from msdoctor.facts.logs import collect

    assert yields_to_task("ENV322", ["ENV322", "ENV056"])
    assert not yields_to_task("ENV322", ["ENV322", "ENV050", "ENV097"])  # a code family, a guess
    (tmp_path / "log.txt").write_bytes(src.read_bytes())
    facts, _ = collect([str(tmp_path)])
    head = headline_finding(signature_findings(facts.get_known("logs.hits")))
    assert head is not None and head.rule == want


def test_a_mooncake_connect_failure_yields_to_adxls_refusal_of_a_link_to_the_same_npu(tmp_path):
    """Mooncake #2300: `Failed to connect to target: …, status: 103900` (COMM072, an unreachable peer or missing
    ADXL prerequisites) whose ADXL message says `not support connect with self device` (COMM708): the two ends are
    on one NPU. Alone (vllm-ascend #5635) the connect failure keeps its reading."""
    from msdoctor.checks.logs import yields_to_task
    from msdoctor.commands.logs import headline_finding, signature_findings
    from msdoctor.facts.logs import collect

    assert yields_to_task("COMM072", ["COMM072", "COMM708"]) and not yields_to_task("COMM072", ["COMM072", "NUM030"])
    for case, want in [("mooncake-2300-ascend-direct-910b-same-device-connect-103900-self-device-2026", "COMM708"),
                       ("vllm-ascend-5635-mooncake-failed-to-connect-segment-103900-1p1d-2026", "COMM072")]:
        d = tmp_path / case
        d.mkdir()
        (d / "log.txt").write_text((CORPUS / case / "log.txt").read_text(encoding="utf-8"), encoding="utf-8")
        facts, _ = collect([str(d)])
        head = headline_finding(signature_findings(facts.get_known("logs.hits")))
        assert head is not None and head.rule == want, (case, head)
