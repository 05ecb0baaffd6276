"""IPython's and Jupyter's traceback, whose header names the exception before the frames.

rfdiffusion#209 (tests/realworld/logs/rfdiffusion-209-…): a Colab cell's output, cut by the paste at the frame
`----> 7 import dgl`, before its exception line. The header `ModuleNotFoundError      Traceback (most recent call
last)` says what was raised. Before, no line of the paste was of a known grammar (exit 2). Now the header opens a
traceback, IPython's frames are read as its frames, and a paste that ends inside them is read as an error of the
header's type at the header's line: the fallback names ENV by it.
The frame forms are IPython's own: Colab's `[/x.py](link) in <module>`, IPython 7's `/x.py in f(a)`, IPython 8's
`File ~/x.py:7, in f()` and `Cell In[3], line 7`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

REAL = Path(__file__).resolve().parents[1] / "realworld" / "logs"
RFDIFFUSION = next(REAL.glob("rfdiffusion-209-*")) / "paste.log"

# IPython 8's layout (the header, a cell frame, a library frame, the arrows); cut before the exception line
IPY8 = ("---------------------------------------------------------------------------\n"
        "OutOfMemoryError                          Traceback (most recent call last)\n"
        "Cell In[3], line 7\n"
        "      5 model = build()\n"
        "----> 7 model.to(device)\n"
        "\n"
        "File ~/miniconda3/lib/python3.10/site-packages/torch/nn/modules/module.py:1160, in Module.to(self, *args)\n"
        "   1158     return t.to(device)\n"
        "-> 1160 return self._apply(convert)\n")  # fmt: skip


def _scan(path: Path, spec, engine: str) -> dict:
    from msdoctor.facts.logscan import ScanSpec, scan_file

    s = ScanSpec(spec.sigs, engine="python") if engine == "python" else ScanSpec(spec.sigs, grep_min_size=0)
    return scan_file(str(path), s)


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_the_headers_exception_is_the_error_of_a_cut_notebook_paste(spec, engine: str) -> None:
    out = _scan(RFDIFFUSION, spec, engine)
    errors = [e for e in out["first_events"] if e.get("severity") == "error"]
    assert len(errors) == 1, errors
    e = errors[0]
    assert e["exc_type"] == "ModuleNotFoundError" and e["line"] == 9, e
    assert "`import dgl`" in e["text"] and e["frames"][-1] == "/content/RFdiffusion/util_module.py", e


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_ipython_8_frames_are_read(tmp_path: Path, spec, engine: str) -> None:
    f = tmp_path / "cell.txt"
    f.write_text(IPY8, encoding="utf-8")
    out = _scan(f, spec, engine)
    errors = [e for e in out["first_events"] if e.get("severity") == "error"]
    assert [e["exc_type"] for e in errors] == ["OutOfMemoryError"]
    assert errors[0]["frames"][-2:] == ["Cell In[3], line 7",
                                        "~/miniconda3/lib/python3.10/site-packages/torch/nn/modules/module.py"]
    assert "`return self._apply(convert)`" in errors[0]["text"]


def test_a_whole_notebook_traceback_is_read_once(tmp_path: Path, spec) -> None:
    """With its exception line the traceback closes there: one error, the exception line's."""
    f = tmp_path / "cell.txt"
    f.write_text(IPY8 + "\nOutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n", encoding="utf-8")
    out = _scan(f, spec, "python")
    assert [(e["rule"], e["line"]) for e in out["first_events"]] == [("MEM044", 11)], out["first_events"]
    assert out["open_traceback"] is None and [x["type"] for x in out["exceptions"]] == ["OutOfMemoryError"]


def test_a_generic_type_is_read_as_a_cut_traceback(tmp_path: Path, spec) -> None:
    """`OSError` or `RuntimeError` in the header says no more than the frames: no error of its own, so the paste
    stays a cut traceback (its frames read) and an issue title beside it is still read (spconv#144)."""
    f = tmp_path / "cell.txt"
    f.write_text(IPY8.replace("OutOfMemoryError        ", "OSError                 "), encoding="utf-8")
    out = _scan(f, spec, "python")
    assert not [e for e in out["first_events"] if e.get("severity") == "error"]
    assert out["open_traceback"]["frames"][-1].endswith("torch/nn/modules/module.py")


def test_cli_names_the_area_from_the_header() -> None:
    r = run_cli("logs", str(RFDIFFUSION))
    assert r.rc != 2, r.err  # a log read (before: "none holds a line of a known log grammar", exit 2)
    assert "ENV099" in r.out and "ModuleNotFoundError" in r.out


# The same notebook output as a GitHub page keeps it: the colour codes without their escape byte (made up around
# IPython 7's layout and colours; the vLLM prefix is the form of tests/realworld/logs/vllm-ascend-5917-…)
REMNANTS = ("[0;31m---------------------------------------------------------------------------[0m\n"
            "[0;31mModuleNotFoundError[0m                       Traceback (most recent call last)\n"
            "[0;32m<ipython-input-2-abc>[0m in [0;36m<module>[0;34m[0m\n"
            "[0;32m----> 1[0;31m [0;32mimport[0m [0mdgl[0m[0;34m[0m[0;34m[0m[0m\n")  # fmt: skip


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_colour_codes_without_their_escape_byte_are_read_through(tmp_path: Path, spec, engine: str) -> None:
    f = tmp_path / "cell.txt"
    f.write_text(REMNANTS, encoding="utf-8")
    errors = [e for e in _scan(f, spec, engine)["first_events"] if e.get("severity") == "error"]
    assert [(e["exc_type"], e["line"]) for e in errors] == [("ModuleNotFoundError", 2)], errors
    assert "`import dgl`" in errors[0]["text"]


def test_a_colour_remnant_prefix_is_stripped_with_the_line_prefixes() -> None:
    from msdoctor.facts.logformats import strip_prefix_info

    pre = strip_prefix_info("[1;36m(VllmWorker TP0 pid=2345)[0;0m ERROR 03-01 10:11:12 [multiproc_executor.py:470] "
                            "WorkerProc hit an exception.")  # fmt: skip
    assert (pre.text, pre.level) == ("WorkerProc hit an exception.", "ERROR")
    # without a reset in the line a bracketed number with an `m` is the line's own text
    assert strip_prefix_info("eta [12m 30s] left").text == "eta [12m 30s] left"
