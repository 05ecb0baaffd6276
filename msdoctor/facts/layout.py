"""Does a log name a parallel layout? (tensor / pipeline / expert / context parallelism, a shard strategy)

An operator's own refusal of its input shapes or dtypes (`For 'MatMul' the input dimensions must be equal`,
`shape '[-1, 49, 8, 128]' is invalid for input of size …`, `For primitive[Dense], the input type must be same`) is
a sharding fault only where tensors are split: a per-rank slice multiplied with an unsliced weight, a reshape with the
global head count. In a job that splits no tensor it is the model's or the script's own error (a layer built for
another width, a dtype the pipeline did not cast). The text cannot say which; what it can say is whether the job
names a layout at all. Of the 38 corpus cases such a rule headed on 2026-12-06, the threads found a split at fault
in 8 and the model code, its config or the data in 30; 4 of the 8 name the split in their text with one of the forms
below (a Ulysses scheme, a vLLM worker name, a collective in the failing frames), the other 4 only in the thread
(they are holdouts now), and none of the 30 names one.

What counts (each a form real logs print; a size of 1 names no split):

* a parallel size above one: Megatron's argument dump `tensor_model_parallel_size ........ 8`, vLLM's
  `tensor_parallel_size=4`, MindSpore's `'model_parallel': 2` / `pipeline_stage: 2`, a flag `--tp 8`,
  `--expert-model-parallel-size 8`, Megatron's check `… must be a multiple of tensor_model_parallel_size (2)`,
  `tp=2`, `cp_size: 8`, the short forms `TP8`, `ep16` (not a lower-case `cp`: `cp310` is a wheel's Python tag);
* vLLM's worker names, which carry a component only when its size is above one (`(Worker_PCP0_TP0 pid=…)`,
  `Worker_DP0_EP3`, cut by the plog's thread column to `ker_DP25_EP25`; multiproc_executor.py's process_name);
* a sequence-parallel scheme (`ulysses`, `ring_attention`), MindSpore's `shard(` / `in_strategy` /
  `SEMI_AUTO_PARALLEL` / `AUTO_PARALLEL`, `enable_expert_parallel`;
* a collective or an expert dispatcher in the text (`all_gather`, `all_to_all`, `reduce_scatter`,
  `token_dispatcher`): the tensor that failed was being split or gathered;
* DeepSpeed's ZeRO stage 3 (`zero_stage: 3`, `"stage": 3` is not read — too many JSON files have a `stage`;
  `deepspeed_stage_3`, `ZeRO-3`, `zero3`, its `stage3_…` settings): every parameter is partitioned, so a weight
  gathered outside the engine is empty on its rank (`The size of tensor a (0) must match …`: lightning-17605,
  llamafactory-2081, trlx-483, round 75's holdouts; open-r1-692, where the thread found a model bug, names ZeRO-3
  only in its prose and stays NUM); not FSDP by name: it is printed by many jobs whose shape error is the model's (verl-4274).

Data parallelism alone is not a layout here: replicas see whole tensors; ZeRO stages 1 and 2 shard only optimizer
states and gradients.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_N = rb"(?:[2-9]|[1-9][0-9]{1,3})"  # a parallel size above one
_NAMED = rb"(?:tensor|pipeline|expert|context|sequence|model|decode[_ ]context|prefill[_ ]context)"
PARALLEL_LAYOUT_RE = re.compile(
    rb"(?i:\b" + _NAMED + rb"[_ -](?:model[_ -])?parallel(?:ism)?(?:[_ -](?:size|degree))?['\"]?\s{0,3}[:=]?[\s.'\"(]{0,60}"
    + _N + rb"\b"
    rb"|--(?:tp|pp|ep|cp|sp|dcp|pcp|(?:tensor|pipeline|expert|context)(?:-model)?-parallel-size|ulysses-degree|"
    rb"ring-degree)[= ]" + _N + rb"\b"
    rb"|\b(?:tp|pp|ep|cp|sp|dcp|pcp|etp|mp|tp_size|pp_size|ep_size|cp_size|sp_size|ulysses_degree|ring_degree|"
    rb"model_parallel|pipeline_stages?)['\"]?\s?[=:]\s?" + _N + rb"\b"
    rb"|\bulysses\b|\bring[_ ]?attention|\.shard\(|\bin_strategy\b|(?<!\w)(?:semi_)?auto_parallel\b|"
    rb"enable_expert_parallel|token_dispatcher|\ball_to_all|\balltoall\b|\ball_gather|\ballgather\b|\breduce_scatter"
    # DeepSpeed ZeRO-3: every parameter partitioned
    rb"|\bzero[_ -]?stage['\"]?\s?[=:]\s?3\b|\bdeepspeed_stage_3|(?<![a-z])zero[_-]?3\b|\bstage3_[a-z_]{3,40})"
    # the short forms: `TP8`, `EP16`, `tp4` (not a lower-case `cp`: `cp310` is a wheel's Python tag)
    rb"|(?<![A-Za-z])(?:TP|PP|EP|CP|PCP|DCP|ETP|tp|pp|ep|etp)" + _N + rb"\b"
    # vLLM's worker names (`Worker_DP0_TP3_EP3`, cut by the plog to `ker_DP25_EP25`)
    rb"|(?:\bWorker|\bker)(?:_[A-Z]{2,3}[0-9]{1,4}){0,6}_(?:PP|PCP|TP|DCP|EP|SP|CFG)[0-9]{1,4}\b"
)
MAX_SHOWN = 80
# The regex is an alternation with no literal prefix: ~7 ms per 64 KiB on one core. A file bigger than BIG (one rank's
# log of a large job, where 1024 files would cost seconds) is searched in its first HEAD_OF_BIG bytes only — its
# launch banner and argument dump — and in its kept events; a paste, a title or a config is searched whole.
BIG = 1 << 20
HEAD_OF_BIG = 16 << 10


def layout_named(head: bytes, events: Iterable[dict[str, Any]], size: int = 0) -> str | None:
    """The first words of ``head`` (a file's first 64 KiB; of a file of ``size`` above BIG its first HEAD_OF_BIG) or of
    its kept events' lines and frames that name a parallel layout, or None."""
    m = PARALLEL_LAYOUT_RE.search(head if size <= BIG else head[:HEAD_OF_BIG])
    if m is None:
        for ev in events:
            text = " ".join([str(ev.get("text") or ""), *map(str, ev.get("frames") or [])]).encode("utf-8", "replace")
            m = PARALLEL_LAYOUT_RE.search(text)
            if m is not None:
                break
    return m.group(0)[:MAX_SHOWN].decode("utf-8", "replace").strip() if m is not None else None


__all__ = ["PARALLEL_LAYOUT_RE", "layout_named"]
