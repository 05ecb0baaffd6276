"""A traceback cut before its exception line, whose innermost frame raises an exception with a literal message.

mindnlp#2054 (tests/realworld/logs/mindnlp-2054-…): the paste stops at `raise ValueError(f"SafeTensorError::
InvalidOffset({key})")` under mindnlp's safetensors reader. Before, the verdict was "incomplete traceback — not
diagnosable" with a CKPT hint from the frames; the raise statement says which exception the frame raised and its
message (but for the `{…}` fields), so it is read as the traceback's exception line (logstate.read_open_raise).
Also: a cut traceback behind NeMo's `[0]:` rank prefix (nemo#8460) is read as a traceback, and its
`dist_checkpointing.load(` call hints CKPT.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

REAL = Path(__file__).resolve().parents[1] / "realworld" / "logs"
MINDNLP = next(REAL.glob("mindnlp-2054-*"))
NEMO = next(REAL.glob("nemo-8460-*"))

CUT = ('Traceback (most recent call last):\n'
       '  File "/home/u/app/train.py", line 12, in <module>\n'
       '    main()\n'
       '  File "/home/u/app/train.py", line 9, in main\n'
       '{code}\n')  # fmt: skip


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_the_raise_line_is_read_as_the_exception(tmp_path, spec, engine):
    from msdoctor.facts.logscan import ScanSpec, scan_file

    f = tmp_path / "paste.log"
    f.write_text(CUT.format(code='    raise ValueError(f"SafeTensorError::InvalidOffset({key})")'), encoding="utf-8")
    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    out = scan_file(str(f), s)
    hit = out["hits"]["CKPT002"]["first"]
    assert hit["line"] == 5 and "InvalidOffset" in hit["text"], hit
    assert out["open_traceback"] is None


def test_the_real_cut_paste_is_diagnosed() -> None:
    rc = run_cli("logs", "--json", str(MINDNLP)).json()["root_cause"]
    assert rc["rule"] == "CKPT002", rc


def test_a_raise_without_a_literal_message_stays_incomplete(tmp_path: Path) -> None:
    (tmp_path / "paste.log").write_text(CUT.format(code="    raise ValueError(msg)"), encoding="utf-8")
    rc = run_cli("logs", "--json", str(tmp_path)).json()["root_cause"]
    assert rc.get("verdict") == "incomplete-traceback", rc


def test_an_unknown_raise_message_goes_to_the_fallback(tmp_path: Path) -> None:
    (tmp_path / "paste.log").write_text(
        CUT.format(code='    raise RuntimeError(f"Unsupported soc_version: {soc_version}")'), encoding="utf-8")
    rc = run_cli("logs", "--json", str(tmp_path)).json()["root_cause"]
    assert rc.get("verdict") != "incomplete-traceback" and (rc.get("rule") or "").startswith("ENV"), rc


def test_a_bare_rank_prefix_is_stripped_and_a_checkpoint_call_hints_ckpt() -> None:
    out = run_cli("logs", "--json", str(NEMO)).json()
    assert out["root_cause"].get("verdict") == "incomplete-traceback", out["root_cause"]
    assert "CKPT097" in {f["rule"] for f in out["findings"]}, out["findings"]


def test_a_markdown_link_reference_is_no_rank_prefix() -> None:
    from msdoctor.facts.logformats import strip_prefixes

    assert strip_prefixes("[0]:  File \"/x/y.py\", line 3, in f") == ('File "/x/y.py", line 3, in f', 0)
    assert strip_prefixes("[1]: https://github.com/NVIDIA/NeMo/issues/8460")[1] is None
    assert strip_prefixes("[default3]:[rank11]: KeyError: 'state'") == ("KeyError: 'state'", 11)


def test_a_message_whose_field_calls_a_function_is_not_read(tmp_path: Path) -> None:
    # `{describe(x)}` runs before the raise: it may have raised in a frame the paste cut
    (tmp_path / "paste.log").write_text(
        CUT.format(code='    raise ValueError(f"SafeTensorError::InvalidOffset({describe(key)})")'), encoding="utf-8")
    rc = run_cli("logs", "--json", str(tmp_path)).json()["root_cause"]
    assert rc.get("verdict") == "incomplete-traceback", rc


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_an_exception_line_cut_short_is_read_whole_from_its_raise(tmp_path, spec, engine):
    # diffusers#2221 as stored: the exception line stops at `trying to initial`; torch's raise statement joins two
    # literals, as Python does
    from msdoctor.facts.logscan import ScanSpec, scan_file

    f = tmp_path / "paste.log"
    f.write_text(CUT.format(code='    raise RuntimeError("trying to initialize the default process group " "twice!")')
                 + "RuntimeError: trying to initial\n", encoding="utf-8")
    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    hits = scan_file(str(f), s)["hits"]
    assert "ENV172" in hits and hits["ENV172"]["first"]["line"] == 6, hits


def test_raise_literal_reads_the_statement() -> None:
    from msdoctor.facts.logstate import raise_literal

    assert raise_literal('raise RuntimeError("trying to initialize the default process group " "twice!")') == \
        ("RuntimeError", "trying to initialize the default process group twice!")
    assert raise_literal("raise ValueError(f'Unsupported soc_version: {soc_version}')") == \
        ("ValueError", "Unsupported soc_version: {soc_version}")
    assert raise_literal('raise ValueError(f"{config.load_checkpoint} is not a valid path to load checkpoint ")') == \
        ("ValueError", "{config.load_checkpoint} is not a valid path to load checkpoint")
    assert raise_literal('raise KeyError(f"bad {fmt(x)}")') is None  # the field calls a function
    assert raise_literal("raise ValueError(msg)") is None
    assert raise_literal('raise ValueError("a message cut before its quote') == ("ValueError", "a message cut before its quote")


def test_torchruns_failure_summary_entry_is_no_rank_prefix() -> None:
    # `Root Cause (first observed failure):` then a bare `[0]:` line: an entry of the summary, not rank 0's log
    from msdoctor.facts.logformats import strip_prefixes

    assert strip_prefixes("[0]:") == ("[0]:", None)
    assert strip_prefixes("[1]:   ") == ("[1]:   ", None)
