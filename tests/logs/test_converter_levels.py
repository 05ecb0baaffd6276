"""Two converters' error grammars (round 75, collector c): OpenVINO Model Optimizer's level prefix `[ ERROR ]  ` and
ONNX Runtime's exceptions named by status (`InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : …`). Before,
neither was read by its grammar (the MO line had no level, the ORT line no …Error class): only a paste's error words
made them errors, and the quote kept MO's prefix. Lines copied from tests/realworld/logs (named beside each); read
here with no rule loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor.checks.logs import unclassified_events
from msdoctor.facts.logs import collect
from msdoctor.wordinggen import stripped_catalogue

MO = [
    "[ INFO ]  The IR preparation was executed by the legacy MO path.",  # an info line: not an error
    # geti-297-… / openvino-352-…
    "[ ERROR ]  List of operations that cannot be converted to Inference Engine IR:",
]
ORT = [
    "2023-01-01 10:00:00,000 - INFO - loading the model",
    # onnxruntime-… `Got invalid dimensions` (a NUM135 case of round 75)
    "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got "
    "invalid dimensions for input: data_batch_0 for the following indices",
]


@pytest.mark.parametrize(("lines", "error"), [(MO, "List of operations that cannot be converted to Inference Engine IR:"),
                                              (ORT, "InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT")])
@pytest.mark.parametrize("engine", ["python", "auto"])
def test_the_converters_error_is_read(tmp_path: Path, lines: list[str], error: str, engine: str) -> None:
    f = tmp_path / "convert.log"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    facts, _ = collect([str(f)], stripped_catalogue(), engine=engine)
    texts = [e["text"] for e in unclassified_events(facts)]
    assert len(texts) == 1 and error in texts[0], texts


def test_the_grammar_of_each_line() -> None:
    """What the reading above rests on (without it the lines were read only by their words in a plain paste)."""
    from msdoctor.facts.logformats import parse_line, strip_prefix_info

    pre = strip_prefix_info(MO[1])
    assert (pre.level, pre.text) == ("ERROR", "List of operations that cannot be converted to Inference Engine IR:")
    rec = parse_line(ORT[1])
    assert (rec.grammar, rec.exc_type) == ("python-exc", "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument")
    # a bare status word is no exception without ORT's tag after it
    assert parse_line("Fail: the download was interrupted").grammar == "plain"
