"""Model, parallel and training configuration of the bundled trainer (plain data, no MindSpore).

``msdoctor train`` reads a config here, turns it into ``config.*`` facts and lets the PAR4xx rules
judge it before anything is launched; the trainer process rebuilds the same dataclasses from the
JSON that ``msdoctor train`` hands it.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A config file that cannot be read or has fields of the wrong type."""


@dataclass
class ParallelConfig:
    data_parallel: int = 1
    model_parallel: int = 1
    pipeline_stage: int = 1
    micro_batch_num: int = 1
    optimizer_shard: bool = False
    recompute: bool = False


@dataclass
class ModelConfig:
    vocab_size: int = 256  # byte-level tokenizer
    seq_length: int = 64
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    ffn_hidden_size: int = 256
    tie_word_embeddings: bool = True
    layernorm_eps: float = 1e-5
    init_std: float = 0.02


@dataclass
class TrainConfig:
    global_batch_size: int = 16  # sequences per optimizer step over all data-parallel ranks
    grad_accum: int = 1
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup_steps: int = 5
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    loss_scale: float = 2.0**12
    loss_scale_window: int = 20
    seed: int = 1234
    save_every: int = 5
    keep_ckpt: int = 3
    dtype: str = "float32"  # compute dtype: float32, float16 (runs on CPU too) or bfloat16 (device only)


@dataclass
class Config:
    name: str = "tiny"
    model: ModelConfig = field(default_factory=ModelConfig)
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], origin: str = "config") -> Config:
        if not isinstance(d, dict):
            raise ConfigError(f"{origin}: expected a table/object at the top level")
        unknown = sorted(set(d) - {"name", "model", "parallel", "train"})
        if unknown:
            raise ConfigError(f"{origin}: unknown section {unknown[0]!r} (expected model, parallel, train)")
        return cls(
            name=str(d.get("name", Path(origin).stem)),
            model=_section(ModelConfig, d.get("model", {}), f"{origin}: [model]"),
            parallel=_section(ParallelConfig, d.get("parallel", {}), f"{origin}: [parallel]"),
            train=_section(TrainConfig, d.get("train", {}), f"{origin}: [train]"),
        )


def _section(kind: type, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    known = {f.name: f for f in fields(kind)}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown field {key!r}")
        want = type(getattr(kind(), key))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: field {key!r} must be {want.__name__}, got {value!r}")
        out[key] = value
    return kind(**out)


def tiny(world: int = 2) -> Config:
    """Trains on 2 CPU cores in a few seconds per dozen steps; pure data parallel over ``world``."""
    return Config(name="tiny", parallel=ParallelConfig(data_parallel=world))


def llama_7b_shaped(world: int = 64) -> Config:
    """A 7B-shaped decoder (32 layers, 4096 hidden, 32 heads) on 64 devices: dp 4, mp 8, pp 2.

    Only validated statically: it cannot run on CPU (semi-auto parallel needs Ascend/GPU).
    """
    return Config(
        name="7b",
        model=ModelConfig(
            vocab_size=32000,
            seq_length=4096,
            hidden_size=4096,
            num_layers=32,
            num_heads=32,
            ffn_hidden_size=11008,
            tie_word_embeddings=False,
        ),
        parallel=ParallelConfig(
            data_parallel=max(1, world // 16),
            model_parallel=8,
            pipeline_stage=2,
            micro_batch_num=4,
            optimizer_shard=True,
            recompute=True,
        ),
        train=TrainConfig(global_batch_size=max(1, world // 16) * 4 * 2, lr=3e-4, min_lr=3e-5, warmup_steps=2000,
                          dtype="bfloat16"),
    )


PRESETS = {"tiny": tiny, "7b": llama_7b_shaped}


def load_config(spec: str, world: int) -> Config:
    """``tiny`` / ``7b`` (presets sized for ``world`` ranks) or a TOML/JSON file."""
    if spec in PRESETS:
        return PRESETS[spec](world)
    path = Path(spec)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{spec}: no such config file (presets: {', '.join(PRESETS)})") from None
    except IsADirectoryError:
        raise ConfigError(f"{spec}: is a directory, expected a TOML or JSON config file") from None
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text.decode("utf-8"))
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{spec}: not a valid {'JSON' if path.suffix == '.json' else 'TOML'} config ({exc})") from None
    cfg = Config.from_dict(data, str(path))
    par = data.get("parallel", {}) if isinstance(data, dict) else {}
    if isinstance(par, dict) and "data_parallel" not in par:
        # unset: data parallel over whatever the tensor/pipeline dimensions leave of the world
        rest = cfg.parallel.model_parallel * cfg.parallel.pipeline_stage
        if rest > 0 and world % rest == 0:
            cfg.parallel.data_parallel = world // rest
    return cfg
