"""Collector: a trainer config (the dict of ``msdoctor_trainer.config.Config.to_dict()``) → ``config.*`` facts.

It never judges and never raises: a field that is missing or not of the expected type becomes
``Unknown`` so the PAR4xx rules that need it are reported as not evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msdoctor.engine.facts import Facts

# section -> fields that are integers (the ones the strategy rules do arithmetic on)
INT_FIELDS: dict[str, tuple[str, ...]] = {
    "model": ("vocab_size", "seq_length", "hidden_size", "num_layers", "num_heads", "ffn_hidden_size"),
    "parallel": ("data_parallel", "model_parallel", "pipeline_stage", "micro_batch_num"),
    "train": ("global_batch_size", "grad_accum"),
}
BOOL_FIELDS: dict[str, tuple[str, ...]] = {
    "model": ("tie_word_embeddings",),
    "parallel": ("optimizer_shard", "recompute"),
}


def collect_config(config: Mapping[str, Any], world_size: int | None, backend: str | None,
                   origin: str = "config") -> Facts:
    """``config.<section>.<field>``, ``config.world_size`` (ranks launched), ``config.backend``."""
    facts = Facts()
    src = f"config:{origin}"
    facts.set("config.name", str(config.get("name", origin)), src)
    if isinstance(world_size, int) and world_size > 0:
        facts.set("config.world_size", world_size, "msdoctor train --workers")
    else:
        facts.unknown("config.world_size", "number of ranks not given", src)
    if backend:
        facts.set("config.backend", backend, "msdoctor train")
    else:
        facts.unknown("config.backend", "device backend not known", src)
    for section, names in (*INT_FIELDS.items(), *BOOL_FIELDS.items()):
        raw = config.get(section)
        values = raw if isinstance(raw, Mapping) else {}
        want = bool if names in BOOL_FIELDS.values() else int
        for name in names:
            key = f"config.{section}.{name}"
            if name not in values:
                facts.unknown(key, f"[{section}] has no {name}", src)
                continue
            v = values[name]
            ok = isinstance(v, bool) if want is bool else (isinstance(v, int) and not isinstance(v, bool))
            if ok:
                facts.set(key, v, src)
            else:
                facts.unknown(key, f"[{section}] {name} is not {want.__name__}: {v!r}", src)
    train = config.get("train") if isinstance(config.get("train"), Mapping) else {}
    dtype = train.get("dtype") if isinstance(train, Mapping) else None
    if isinstance(dtype, str) and dtype:
        facts.set("config.train.dtype", dtype, src)
    else:
        facts.unknown("config.train.dtype", "[train] has no dtype", src)
    return facts
