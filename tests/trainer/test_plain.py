"""Trainer pieces that need no MindSpore: config, injections, tokenizer, schedule, checkpoint files."""

from __future__ import annotations

import json
import os

import pytest
from msdoctor_trainer import ckpt
from msdoctor_trainer.config import Config, ConfigError, llama_7b_shaped, load_config, tiny
from msdoctor_trainer.data import windows
from msdoctor_trainer.inject import KINDS, InjectError, Injections, parse_inject
from msdoctor_trainer.schedule import DynamicLossScale, lr_at
from msdoctor_trainer.tokenizer import ByteTokenizer

# -- config -------------------------------------------------------------------------------------


def test_presets_sized_for_world():
    assert tiny(4).parallel.data_parallel == 4
    c = llama_7b_shaped(64)
    p = c.parallel
    assert p.data_parallel * p.model_parallel * p.pipeline_stage == 64
    assert (c.model.hidden_size, c.model.num_layers, c.model.num_heads) == (4096, 32, 32)


def test_config_round_trips_through_json(tmp_path):
    c = llama_7b_shaped(64)
    f = tmp_path / "c.json"
    f.write_text(json.dumps(c.to_dict()))
    assert load_config(str(f), 64) == c


def test_config_from_toml_with_int_for_float(tmp_path):
    f = tmp_path / "small.toml"
    f.write_text("[model]\nnum_layers = 3\n[train]\nlr = 1\n")
    c = load_config(str(f), 2)
    assert c.model.num_layers == 3 and c.train.lr == 1.0 and c.name == "small"
    assert c.parallel.data_parallel == 2  # unset: data parallel over the world
    f.write_text("[parallel]\nmodel_parallel = 2\n")
    assert load_config(str(f), 8).parallel.data_parallel == 4


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[model]\nnum_layers = 'three'\n", "must be int"),
        ("[model]\nlayers = 3\n", "unknown field 'layers'"),
        ("[optim]\nlr = 1\n", "unknown section"),
        ("[model\n", "not a valid TOML"),
        ("[parallel]\nrecompute = 1\n", "must be bool"),
    ],
)
def test_bad_config_files_name_the_problem(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_config(str(f), 2)


def test_missing_or_binary_config(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(str(tmp_path / "nope.toml"), 2)
    f = tmp_path / "bin.json"
    f.write_bytes(b"\x00\xff\x10garbage")
    with pytest.raises(ConfigError, match="not a valid JSON"):
        load_config(str(f), 2)
    with pytest.raises(ConfigError, match="top level"):
        Config.from_dict([1, 2], "x")  # type: ignore[arg-type]


# -- injections --------------------------------------------------------------------------------


def test_parse_inject_defaults_and_overrides():
    it = parse_inject("nan:rank=0,step=7")
    assert it.kind == "nan" and it.params == {"rank": 0, "step": 7, "count": 1}
    assert parse_inject("shape").params == {"rank": "all"}
    assert parse_inject("desync-layernorm").spec() == "desync-layernorm"
    assert parse_inject("straggler:ms=50").spec() == "straggler:rank=1,ms=50"


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("oops", "unknown kind"),
        ("nan:rank", "expected key=value"),
        ("nan:speed=3", "takes no 'speed'"),
        ("crash:step=x", "must be an integer"),
        ("hang:step=-1", ">= 0"),
        ("seed-mismatch:rank=1", "takes no 'rank'"),
    ],
)
def test_parse_inject_rejects(spec, needle):
    with pytest.raises(InjectError, match=needle):
        parse_inject(spec)


def test_injections_per_rank_and_step():
    inj = Injections(["nan:rank=1,step=3,count=2", "shape"])
    assert inj.at_step("nan", 1, 2) is None
    assert inj.at_step("nan", 1, 3) is not None and inj.at_step("nan", 1, 4) is not None
    assert inj.at_step("nan", 1, 5) is None
    assert inj.at_step("nan", 0, 3) is None
    assert inj.get("shape", 0) is not None and inj.get("shape", 5) is not None
    with pytest.raises(InjectError, match="given twice"):
        Injections(["nan", "nan:step=2"])
    with pytest.raises(InjectError, match="does not exist with 2 workers"):
        Injections(["crash:rank=2"]).validate_world(2)
    assert set(KINDS) >= {"nan", "hang", "straggler", "shape", "desync-layernorm", "seed-mismatch",
                          "data-stall", "mem-leak", "crash"}


# -- tokenizer and windows -----------------------------------------------------------------------


def test_byte_tokenizer_round_trip_unicode():
    tok = ByteTokenizer()
    text = "def f(x):\n    return x →"
    ids = tok.encode(text)
    assert all(0 <= i < 256 for i in ids) and len(ids) == len(text.encode())
    assert tok.decode(ids) == text
    assert tok.decode(ids[:-1]) == text[:-1] + "\ufffd"  # a window cut inside "→" still decodes


def test_windows_share_one_token_between_input_and_label():
    w = windows(list(range(10)), 3)
    assert w.shape == (3, 4)
    assert w[0].tolist() == [0, 1, 2, 3] and w[1].tolist() == [3, 4, 5, 6]
    assert windows([1, 2], 4).shape == (0, 5)


# -- schedule and loss scale ---------------------------------------------------------------------


def test_lr_warmup_then_cosine_to_floor():
    lrs = [lr_at(s, 100, 1.0, 0.1, 10) for s in range(1, 101)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a <= b for a, b in zip(lrs[:10], lrs[1:10], strict=False))  # warm-up rises
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:], strict=False))  # then decays
    assert lrs[-1] == pytest.approx(0.1)


def test_dynamic_loss_scale_halves_on_overflow_and_grows_after_window():
    s = DynamicLossScale(scale=1024.0, window=3)
    assert s.update(False) is False and s.scale == 512.0
    assert all(s.update(True) for _ in range(3)) and s.scale == 1024.0
    s2 = DynamicLossScale(scale=1.0, window=3)
    s2.update(False)
    assert s2.scale == 1.0  # never below min_scale


# -- checkpoint files ----------------------------------------------------------------------------


def _writer(payload: bytes):
    def write(path: str) -> None:
        with open(path, "wb") as fh:
            fh.write(payload)

    return write


def test_save_atomic_keeps_last_k(tmp_path):
    for step in (2, 4, 6, 8):
        ckpt.save_atomic(_writer(b"x" * step), tmp_path, 0, step, keep=2)
    d = ckpt.rank_dir(tmp_path, 0)
    assert [s for s, _ in ckpt.list_ckpts(d)] == [6, 8]
    assert ckpt.latest(d) == (8, d / "step_000008.ckpt")
    assert not [p for p in d.iterdir() if p.name.startswith(".tmp-")]


def test_failed_write_leaves_no_checkpoint(tmp_path):
    def broken(path: str) -> None:
        with open(path, "wb") as fh:
            fh.write(b"half")
        raise OSError("disk full")

    ckpt.save_atomic(_writer(b"good"), tmp_path, 0, 2, keep=3)
    with pytest.raises(OSError, match="disk full"):
        ckpt.save_atomic(broken, tmp_path, 0, 4, keep=3)
    d = ckpt.rank_dir(tmp_path, 0)
    assert ckpt.latest(d) == (2, d / "step_000002.ckpt")  # the resume point is still the complete one
    assert sorted(os.listdir(d)) == ["step_000002.ckpt"]


def test_list_ckpts_ignores_temp_and_foreign_files(tmp_path):
    (tmp_path / ".tmp-1-step_000009.ckpt").write_bytes(b"partial")
    (tmp_path / "step_000003.ckpt").write_bytes(b"ok")
    (tmp_path / "notes.txt").write_text("x")
    assert [s for s, _ in ckpt.list_ckpts(tmp_path)] == [3]
    assert ckpt.list_ckpts(tmp_path / "missing") == []
