"""An operator's shape / dtype refusal is PAR only where the input names a parallel layout; elsewhere its twin (NUM).

PAR001 (MatMul inner dimensions), PAR010 (reshape / broadcast sizes) and PAR030 (input dtypes) read an operator's
own refusal. Their twins NUM096, NUM098 and NUM701 (`twin_of` in the TOML) report the same lines in an input that
names no tensor / pipeline / expert / context parallel size above one, no vLLM worker name with such a component, no
shard strategy, no collective in the text (msdoctor/facts/layout.py). Every log line below is a real user's line
from the corpus (the case named beside it); a test puts lines of two threads together only to show the layout rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor.engine.catalogue import Catalogue, load_catalogue, parse_document
from msdoctor.errors import CatalogueError
from msdoctor.facts.layout import layout_named
from msdoctor.facts.logs import collect
from tests.conftest import run_cli

# mindnlp-986 (MindNLP Bert-LSTM-CRF, one device)
MATMUL = "ValueError: For 'MatMul' the input dimensions must be equal, but got 'x1_col': 768 and 'x2_row': 3072.\n"
# vllm-ascend-11231 (MTP with prefill context parallel: vLLM names the worker `_PCP0` only when PCP > 1)
PCP_WORKER = ("(Worker_PCP0_TP0 pid=694) ERROR 06-30 07:27:42 [multiproc_executor.py:962] ValueError: could not broadcast "
              "input array from shape (29,) into shape (31,)\n")
# nemo/megatron (bionemo-recipes-784 family): Megatron's own check names the tensor-parallel size
TP_CHECK = " 0: ValueError: num_attention_heads (15) must be a multiple of tensor_model_parallel_size (2).\n"
# gpustack-2712: a vLLM engine on one device
TP_ONE = '    llm = LLM(model="/home/data/models/meta-llama/LLaMA3-8B", tensor_parallel_size=1)\n'
# mindspore-119: a wheel's Python tag is no context-parallel size
WHEEL = "ERROR: mindspore-0.1.0-cp37-cp37m-linux_x86_64.whl is not a supported wheel on this platform.\n"


def _logs(tmp_path: Path, **files: str) -> dict:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return run_cli("logs", "--json", str(tmp_path)).json()


def test_a_bare_matmul_refusal_is_the_models_shape_error(tmp_path: Path) -> None:
    out = _logs(tmp_path, **{"paste.log": MATMUL})
    rc = out["root_cause"]
    assert rc["rule"] == "NUM096", rc
    assert "768" in rc["message"] and "3072" in rc["message"]  # the values PAR001's signature parsed
    f = next(f for f in out["findings"] if f["rule"] == "NUM096")
    assert "not a strategy" in f["fix"] and "PAR001" not in {g["rule"] for g in out["findings"]}


def test_a_layout_in_the_same_text_keeps_the_sharding_rule(tmp_path: Path) -> None:
    rc = _logs(tmp_path, **{"paste.log": PCP_WORKER})["root_cause"]
    assert rc["rule"] == "PAR010", rc


def test_a_layout_named_in_another_file_of_the_job_counts(tmp_path: Path) -> None:
    facts, scan = collect([str(_write(tmp_path, {"train.log": TP_CHECK, "worker.log": MATMUL}))])
    hits = {r for s in scan.files for r in (s.get("hits") or {})}
    assert "PAR001" in hits and "NUM096" not in hits
    assert facts.get_known("logs.parallel_layout")["text"].startswith("tensor_model_parallel_size")


def test_a_size_of_one_or_a_wheel_tag_names_no_layout(tmp_path: Path) -> None:
    facts, scan = collect([str(_write(tmp_path, {"paste.log": TP_ONE + WHEEL + MATMUL}))])
    hits = {r for s in scan.files for r in (s.get("hits") or {})}
    assert "NUM096" in hits and "PAR001" not in hits
    assert facts.get_known("logs.parallel_layout") == {}


@pytest.mark.parametrize("text", [
    "  tensor_model_parallel_size ...................... 8",  # Megatron's argument dump
    "--tensor-parallel-size 4", "'model_parallel': 2", "[2026-03-07 03:03:55 TP9 EP9] Scheduler hit",
    "[ERROR] RUNTIME(1254,ker_DP25_EP25):2025-12-19-15:50:0", "set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL)",
    # DeepSpeed ZeRO-3 (every parameter partitioned): a config, Lightning's strategy name, a config file's name
    "zero_stage: 3", "strategy=deepspeed_stage_3_offload", "--deepspeed ds_zero3.json", '"stage3_prefetch_bucket_size": 5e8',
])  # fmt: skip
def test_layout_forms(text: str) -> None:
    assert layout_named(text.encode(), []) is not None


@pytest.mark.parametrize("text", [
    "tensor_model_parallel_size ...................... 1", "Worker pid=12 TP0 cp311", "sleep2 step8 stp4",
    "expert_model_parallel_size: None",
    "zero_stage: 2", "FSDP wrap policy", "nonzero3",  # ZeRO-2 shards no parameter; FSDP by name is not read
])  # fmt: skip
def test_no_layout_forms(text: str) -> None:
    assert layout_named(text.encode(), []) is None


def test_a_layout_in_a_failing_frame_counts() -> None:
    ev = {"text": "RuntimeError: shape '[2, 32768]' is invalid for input of size 16384",
          "frames": ["/vllm_ascend/ops/register_custom_ops.py"], "rule": "PAR010"}  # fmt: skip
    assert layout_named(b"", [ev]) is None
    assert layout_named(b"", [dict(ev, frames=["/vllm_ascend/distributed/all_gather_utils.py"])]) is not None


def test_the_shipped_twins() -> None:
    twins = load_catalogue().twins()
    assert twins == {"PAR001": "NUM096", "PAR010": "NUM098", "PAR030": "NUM701", "PAR013": "NUM180"}
    for of, twin in twins.items():
        r = load_catalogue().get(twin)
        assert r is not None and r.kind == "twin" and r.area == "NUM" and r.twin_of == of
        src = load_catalogue().get(of)
        assert src is not None
        assert load_catalogue().as_reported(src, layout=False) is r and load_catalogue().as_reported(src, layout=True) is src


def test_a_catalogue_whose_twin_is_switched_off_reports_the_rule() -> None:
    # bench/leaveout.py replaces the rule table: the twins are read again from the new table, not kept from the old
    cat = Catalogue(list(load_catalogue()))
    par = cat.get("PAR001")
    assert par is not None and cat.as_reported(par, layout=False).id == "NUM096"
    cat._rules = {k: v for k, v in cat._rules.items() if k != "NUM096"}
    assert cat.twins().get("PAR001") is None and cat.as_reported(par, layout=False) is par


TWIN = """id = "NUM096"
title = '''t t t t t t'''
severity = "error"
area = "NUM"
role = "root"
detects = '''detects the lines of another rule'''
cause = '''cause cause cause'''
confirm = '''confirm confirm'''
fix = '''fix fix fix fix'''
example = '''example line here'''
references = ['''ref''']
{extra}
"""


def test_a_twin_has_no_signatures_of_its_own() -> None:
    with pytest.raises(CatalogueError, match="neither"):
        parse_document(TWIN.format(extra='twin_of = "PAR001"\n[[signatures]]\npattern = "x"'), "NUM096.toml", area_dir="num")


def test_a_twin_names_an_active_signature_rule_of_its_role() -> None:
    cat = load_catalogue()
    par = cat.get("PAR001")
    assert par is not None
    with pytest.raises(CatalogueError, match="not an active signature rule"):
        Catalogue([parse_document(TWIN.format(extra='twin_of = "PAR999"'), "NUM096.toml", area_dir="num")]).check_twins()
    warn = parse_document(TWIN.format(extra='twin_of = "PAR001"').replace('"error"', '"warning"'), "NUM096.toml",
                          area_dir="num")  # fmt: skip
    with pytest.raises(CatalogueError, match="role and severity"):
        Catalogue([par, warn]).check_twins()


def _write(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


# comfyui-wanvideo-174 (ComfyUI WanVideo TeaCache, one process); grok-1-248 (a device mesh the devices do not fill)
BROADCAST = "RuntimeError: output with shape [1, 8190, 5120] doesn't match the broadcast shape [2, 8190, 5120]"


def test_the_keyword_fallback_reads_shape_words_as_the_twins_do() -> None:
    from msdoctor.facts.logfamily import by_layout, classify

    c = classify([BROADCAST])
    assert c is not None and c.area == "PAR"  # the keyword lists' shape words are PAR's
    assert by_layout(c, layout=False).area == "NUM"  # no parallel layout named: an operator's input error
    assert by_layout(c, layout=True).area == "PAR"
    split = classify(["ValueError: Number of devices 1 must equal the product of mesh_shape (1, 8)"])
    assert split is not None and split.area == "PAR" and by_layout(split, layout=False).area == "PAR"


def test_a_big_files_layout_is_read_in_its_first_lines_and_its_events() -> None:
    # one rank's log of a large job: its banner and argument dump (the first 16 KiB) and its kept events are read,
    # not the whole 64 KiB head (the regex costs ~7 ms per 64 KiB; a 1024-rank tree would pay seconds)
    late = b"x" * (40 << 10) + TP_CHECK.encode()
    assert layout_named(late, [], size=10) is not None  # a paste-sized file: its whole head
    assert layout_named(late, [], size=8 << 20) is None  # a big file: its first 16 KiB only
    assert layout_named(late, [{"text": TP_CHECK}], size=8 << 20) is not None  # … and its kept events
