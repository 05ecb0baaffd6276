"""PAR401–PAR499: a parallel strategy / model shape that cannot work, found before launch.

Pure functions of the ``config.*`` facts (``msdoctor/facts/config.py``); each names the numbers that
disagree so the finding says what to change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.engine.model import Evidence, Hit, check_params


def _ev(facts: Facts, *names: str) -> tuple[Evidence, ...]:
    return tuple(Evidence(text=str(facts.need(n)), fact=n) for n in names)


def _divides(facts: Facts, whole: str, part: str, what: str) -> Iterable[Hit]:
    w, p = facts.need(whole), facts.need(part)
    if p > 0 and w % p != 0:
        yield Hit(f"{what}: {whole.rsplit('.', 1)[1]}={w} is not divisible by {part.rsplit('.', 1)[1]}={p}",
                  _ev(facts, whole, part), data={"whole": w, "part": p})


@check_params()
def heads_divisible_by_mp(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    yield from _divides(facts, "config.model.num_heads", "config.parallel.model_parallel",
                        "attention heads cannot be split evenly over the model-parallel ranks")


@check_params()
def layers_divisible_by_pp(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    yield from _divides(facts, "config.model.num_layers", "config.parallel.pipeline_stage",
                        "layers cannot be split evenly over the pipeline stages")


@check_params()
def hidden_divisible_by_heads(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    yield from _divides(facts, "config.model.hidden_size", "config.model.num_heads",
                        "the hidden size is not a whole number of heads")


@check_params()
def vocab_divisible_by_mp(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    yield from _divides(facts, "config.model.vocab_size", "config.parallel.model_parallel",
                        "the vocabulary-parallel embedding / LM head cannot be split evenly")


@check_params()
def ffn_divisible_by_mp(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    yield from _divides(facts, "config.model.ffn_hidden_size", "config.parallel.model_parallel",
                        "the MLP's column-parallel weight cannot be split evenly")


@check_params()
def micro_batches_cover_stages(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    pp, micro = facts.need("config.parallel.pipeline_stage"), facts.need("config.parallel.micro_batch_num")
    if pp > 1 and micro < pp:
        yield Hit(f"pipeline with {pp} stages but only {micro} micro-batches: MindSpore requires "
                  f"micro_batch_num >= pipeline_stage, and the bubble would idle most stages",
                  _ev(facts, "config.parallel.pipeline_stage", "config.parallel.micro_batch_num"),
                  data={"pipeline_stage": pp, "micro_batch_num": micro})


@check_params()
def devices_match_world(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    dp, mp = facts.need("config.parallel.data_parallel"), facts.need("config.parallel.model_parallel")
    pp, world = facts.need("config.parallel.pipeline_stage"), facts.need("config.world_size")
    if dp * mp * pp != world:
        yield Hit(f"data_parallel × model_parallel × pipeline_stage = {dp}×{mp}×{pp} = {dp * mp * pp}, "
                  f"but {world} ranks are launched",
                  _ev(facts, "config.parallel.data_parallel", "config.parallel.model_parallel",
                      "config.parallel.pipeline_stage", "config.world_size"),
                  data={"product": dp * mp * pp, "world_size": world})


@check_params()
def batch_divisible(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    gbs, dp = facts.need("config.train.global_batch_size"), facts.need("config.parallel.data_parallel")
    micro, accum = facts.need("config.parallel.micro_batch_num"), facts.need("config.train.grad_accum")
    unit = dp * max(1, micro) * max(1, accum)
    if unit > 0 and (gbs % unit != 0 or gbs < unit):
        yield Hit(f"global_batch_size={gbs} does not split into data_parallel={dp} × micro_batch_num={micro} "
                  f"× grad_accum={accum} = {unit} equal micro-batches",
                  _ev(facts, "config.train.global_batch_size", "config.parallel.data_parallel",
                      "config.parallel.micro_batch_num", "config.train.grad_accum"),
                  data={"global_batch_size": gbs, "unit": unit})


@check_params()
def sharding_needs_device(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    backend = facts.need("config.backend")
    mp, pp = facts.need("config.parallel.model_parallel"), facts.need("config.parallel.pipeline_stage")
    if str(backend).upper() == "CPU" and (mp > 1 or pp > 1):
        yield Hit(f"model_parallel={mp}, pipeline_stage={pp} need SEMI_AUTO_PARALLEL, which MindSpore "
                  "refuses on the CPU backend (\"Invalid communication backend: CPU\")",
                  _ev(facts, "config.backend", "config.parallel.model_parallel", "config.parallel.pipeline_stage"),
                  data={"backend": backend})


@check_params()
def positive_sizes(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    names = [f"config.parallel.{n}" for n in ("data_parallel", "model_parallel", "pipeline_stage", "micro_batch_num")]
    names += ["config.model.num_heads", "config.model.num_layers", "config.train.global_batch_size",
              "config.train.grad_accum"]
    for n in names:
        v = facts.need(n)
        if v < 1:
            yield Hit(f"{n.split('.', 1)[1]} must be at least 1, got {v}", _ev(facts, n), data={"field": n})


@check_params(cpu_dtypes=list | None)
def dtype_supported_by_backend(facts: Facts, params: Mapping[str, Any]) -> Iterable[Hit]:
    backend, dtype = str(facts.need("config.backend")), str(facts.need("config.train.dtype"))
    allowed = params.get("cpu_dtypes", ["float32"])
    if backend.upper() == "CPU" and dtype not in allowed:
        yield Hit(f"dtype={dtype} on the CPU backend: MindSpore's CPU kernels compute in {', '.join(allowed)} only",
                  _ev(facts, "config.backend", "config.train.dtype"), data={"dtype": dtype})
