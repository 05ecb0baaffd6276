"""The training process of one rank, launched by msrun (``msdoctor train`` builds the command).

Why a custom PyNative loop and not ``Model.train`` or a ``@jit`` step: the faults this trainer
reproduces live *between* the parts of a step (a rank that stops right before its gradient
all-reduce, LayerNorm gradients left out of it, a NaN entering the loss on one rank), and the
watchdog marks each part as a phase. PyNative runs every part as ordinary Python, starts in about
a second (no graph compilation, which costs tens of seconds per rank on 2 shared cores) and the tiny
model's step stays in the tens of milliseconds on CPU.

Data parallel only: gradients are flattened into one buffer and summed with one real all-reduce
(MindSpore's CPU collective), then averaged, clipped by global norm and checked for overflow.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from msdoctor_trainer import ckpt as ckpt_files
from msdoctor_trainer.config import Config
from msdoctor_trainer.inject import Injections
from msdoctor_trainer.schedule import DynamicLossScale, lr_at


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="msdoctor_trainer.train")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--config-json", required=True, help="the resolved config written by msdoctor train")
    p.add_argument("--data", required=True, help="MindRecord file of token windows")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--inject", action="append", default=[])
    p.add_argument("--checksum-every", type=int, default=5)
    p.add_argument("--profile", default="", help="step window START-STOP to capture with mindspore.Profiler")
    p.add_argument("--resume", action="store_true")
    return p.parse_args(argv)


def log(msg: str) -> None:
    print(msg, flush=True)


def _sync() -> None:
    """Wait for every launched kernel (PyNative queues them asynchronously).

    ``mindspore.runtime.synchronize()`` refuses CPU on its first call with an ERROR log line
    ("CPU device is not supported") that would pollute the worker log the log rules read, then
    calls this same runtime function on every later call; on CPU it does wait (measured: a
    straggler's peer's wait shows up in comm_time only with it).
    """
    from mindspore._c_expression import synchronize

    synchronize()


class Trainer:
    def __init__(self, args: argparse.Namespace) -> None:
        import mindspore as ms
        from mindspore.communication import get_group_size, get_rank, init

        self.args = args
        self.run_dir = Path(args.run_dir)
        self.cfg = Config.from_dict(json.loads(Path(args.config_json).read_text()), args.config_json)
        self.inj = Injections(args.inject)
        ms.set_device("CPU")
        ms.set_context(mode=ms.PYNATIVE_MODE)
        init()  # the real CPU collective backend, networked by msrun's scheduler
        self.rank, self.world = get_rank(), get_group_size()
        self.ms = ms

        from msdoctor.watch.watchdog import Watchdog

        self.wd = Watchdog(self.run_dir, self.rank, self.world).start(
            {"config": self.cfg.to_dict(), "steps": args.steps, "inject": self.inj.specs()}
        )
        # Replicas must start identical: one seed on every rank, set before any parameter exists.
        seed = self.cfg.train.seed
        if self.inj.get("seed-mismatch", self.rank):
            seed += self.rank  # the misplaced, rank-dependent seed
        ms.set_seed(seed)
        np.random.seed(seed)

    # -- construction -------------------------------------------------------------------------------
    def build(self) -> None:
        import mindspore as ms
        from mindspore import nn
        from msdoctor_trainer.data import make_dataset
        from msdoctor_trainer.model import GPT, layernorm_params

        m, p, t = self.cfg.model, self.cfg.parallel, self.cfg.train
        shape = self.inj.get("shape", self.rank)
        k_heads = m.num_heads // 2 if shape else None  # q and k disagree on the head split
        self.net = GPT(m, p, k_heads=k_heads)
        if t.dtype != "float32":
            # Mixed precision: cells compute in t.dtype, parameters (master weights), gradients
            # and optimizer state stay fp32; the dynamic loss scale guards the fp16 range.
            self.net.to_float(getattr(ms, t.dtype))
        params = self.net.trainable_params()
        # Parameters are Tensors: `in`/`==` would compare values elementwise, so split by name.
        skip = {x.name for x in params if x.name.endswith((".bias", ".gamma", ".beta")) or x.name == "wpe"}
        no_decay = [x for x in params if x.name in skip]
        decay = [x for x in params if x.name not in skip]
        self.opt = nn.AdamWeightDecay(
            [{"params": decay, "weight_decay": t.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            learning_rate=t.lr, eps=1e-8,
        )
        self.params = list(self.opt.parameters)
        self.desync = self.inj.get("desync-layernorm", self.rank) is not None
        ln = {x.name for x in layernorm_params(self.net)}
        # Which gradients go through the all-reduce. Correct: all of them (LayerNorm gamma/beta are
        # replicated, so their gradients must be averaged like any other replicated weight).
        self.reduced = [not (self.desync and x.name in ln) for x in self.params]
        self.sizes = [int(np.prod(x.shape)) for x in self.params]
        self.scaler = DynamicLossScale(scale=t.loss_scale, window=t.loss_scale_window)
        self.micro_batch = t.global_batch_size // (p.data_parallel * t.grad_accum)
        if self.micro_batch < 1:
            raise ValueError(f"global_batch_size {t.global_batch_size} < data_parallel × grad_accum")
        stall = self.inj.get("data-stall", self.rank)
        self.dataset = make_dataset(self.args.data, self.rank, self.world, self.micro_batch, t.seed,
                                    stall_ms=stall["ms"] if stall else 0)
        self.poison = ms.Tensor(1.0, ms.float32)

        def forward(tokens: Any, factor: Any) -> Any:
            return self.net(tokens) * factor

        self.grad_fn = ms.value_and_grad(forward, None, self.opt.parameters)
        self.start_step = 0
        self.save_all_ranks = self.desync  # drift can only be compared if every replica is saved
        if self.args.resume:
            self._resume()

    def _resume(self) -> None:
        import mindspore as ms

        src_rank = self.rank if self.save_all_ranks else 0
        src = ckpt_files.rank_dir(self.run_dir / "ckpt", src_rank)
        if src_rank == self.rank:
            for p in ckpt_files.clean_stale_tmp(src):  # a save killed mid-write left it; never loaded
                log(f"rank {self.rank}: removed {p.name}, the temp file of a save that did not finish")
        found = ckpt_files.latest(src)
        if found is None:
            log(f"rank {self.rank}: --resume but no checkpoint under {self.run_dir / 'ckpt'}; starting at step 1")
            return
        step, path = found
        state = ms.load_checkpoint(str(path))
        # Copy into the existing buffers (ops.assign): the optimizer's @jit graph holds on to the
        # buffers it was compiled with (see the learning-rate update in train()).
        missing = []
        for x in self.opt.get_parameters():
            if x.name == "learning_rate":
                continue
            if x.name not in state:
                missing.append(x.name)
                continue
            ms.ops.assign(x, ms.Tensor(state[x.name].asnumpy()))
        if missing:
            raise ValueError(f"{path}: checkpoint lacks {len(missing)} parameters, e.g. {missing[:3]}")
        self.start_step = int(state["step"].asnumpy()) if "step" in state else step
        if "loss_scale" in state:
            self.scaler.scale = float(state["loss_scale"].asnumpy())
        log(f"rank {self.rank}: resumed from {path} at step {self.start_step}")

    # -- one step ------------------------------------------------------------------------------------
    def _all_reduce_mean(self, grads: tuple[Any, ...]) -> tuple[list[Any], Any]:
        """Average the selected gradients over ranks with ONE all-reduce of a flat buffer.

        Returns the gradients and the squared norm of those left out of the all-reduce (averaged
        over ranks through one extra element of the same buffer, so every rank computes the same
        global norm and the same clipping factor; ``None`` when every gradient is reduced).
        """
        from mindspore import ops
        from mindspore.ops.communication import all_reduce

        out = list(grads)
        idx = [i for i, r in enumerate(self.reduced) if r]
        local = [i for i, r in enumerate(self.reduced) if not r]
        pieces = [ops.reshape(grads[i], (-1,)) for i in idx]
        if local:
            pieces.append(ops.reshape(ops.stack([ops.sum(grads[i] * grads[i]) for i in local]).sum(), (1,)))
        flat = ops.cat(pieces)
        if self.world > 1:
            # MindSpore 2.10's ops.communication.all_reduce works in place (returns the handle,
            # None when synchronous); older builds return (tensor, handle).
            res = all_reduce(flat)
            if isinstance(res, tuple):
                flat = res[0]
            flat = flat / self.world
        local_sq = None
        if local:
            local_sq, flat = flat[-1], flat[:-1]
        parts = ops.split(flat, [self.sizes[i] for i in idx])
        for i, part in zip(idx, parts, strict=True):
            out[i] = ops.reshape(part, grads[i].shape)
        return out, local_sq

    def _save(self, step: int) -> None:
        import mindspore as ms

        if self.rank != 0 and not self.save_all_ranks:
            return
        # Weights, Adam moments (adam_m.*, adam_v.*) and global_step: everything a resume needs to
        # continue exactly (the learning rate is recomputed from the step).
        state = [{"name": x.name, "data": x} for x in self.opt.get_parameters() if x.name != "learning_rate"]
        extra = {"step": step, "loss_scale": self.scaler.scale}

        def write(tmp: str) -> None:
            ms.save_checkpoint(state, tmp, append_dict=extra)

        path = ckpt_files.save_atomic(write, self.run_dir / "ckpt", self.rank, step, self.cfg.train.keep_ckpt)
        log(f"rank {self.rank}: saved {path}")

    def train(self) -> None:
        import mindspore as ms
        from mindspore import ops

        t = self.cfg.train
        steps = self.args.steps
        it = self.dataset.create_tuple_iterator(output_numpy=True)
        per_epoch = max(1, self.dataset.get_dataset_size() or 1)
        # Resume: skip the batches the finished steps consumed, so no sample is seen twice or lost.
        for _ in range(self.start_step * t.grad_accum):
            next(it)
        # Step 0, or the step a resume restored: comparable with the checksum taken when it was saved.
        self.wd.checksum_params(self.start_step, self.net.trainable_params())
        leak: list[bytearray] = []
        profiler, window = self._profiler()
        for step in range(self.start_step + 1, steps + 1):
            t0 = time.perf_counter()
            if profiler is not None and step == window[0]:
                profiler.start()
            crash = self.inj.at_step("crash", self.rank, step)
            if crash is not None:
                log(f"rank {self.rank}: injected crash at step {step} (exit {crash['code']})")
                sys.stdout.flush()
                os._exit(crash["code"])
            lr = lr_at(step, steps, t.lr, t.min_lr, t.warmup_steps)
            # In place: AdamWeightDecay.construct is a @jit graph that keeps the buffer it was compiled
            # with, so set_data() would leave it on the first step's rate (measured, MindSpore 2.10).
            ops.assign(self.opt.learning_rate, ms.Tensor(lr, ms.float32))
            acc: list[Any] | None = None
            loss_sum, data_wait, compute = 0.0, 0.0, 0.0
            nan = self.inj.at_step("nan", self.rank, step) is not None
            for _ in range(t.grad_accum):
                self.wd.phase("data", step)
                td = time.perf_counter()
                (tokens,) = next(it)
                data_wait += time.perf_counter() - td
                self.wd.phase("forward", step)
                tc = time.perf_counter()
                straggle = self.inj.get("straggler", self.rank)
                if straggle is not None:  # a slow rank: its compute takes MS longer every step
                    time.sleep(straggle["ms"] / 1000.0)
                factor = self.scaler.scale / t.grad_accum
                if nan:
                    factor = float("nan")  # the loss itself becomes NaN, and every gradient with it
                loss, grads = self.grad_fn(ms.Tensor(tokens), ms.Tensor(factor, ms.float32))
                loss_sum += float(loss.asnumpy()) / (self.scaler.scale if not nan else 1.0)
                acc = list(grads) if acc is None else [a + g for a, g in zip(acc, grads, strict=True)]
                # PyNative launches kernels asynchronously: wait for the backward pass so the phases
                # (and compute_time / comm_time) measure what they name.
                _sync()
                compute += time.perf_counter() - tc
            assert acc is not None
            self.wd.phase("collective", step)
            if self.inj.at_step("hang", self.rank, step) is not None:
                log(f"rank {self.rank}: injected hang before the gradient all-reduce of step {step}")
                while True:  # a rank that never reaches its collective: the peers time out in theirs
                    time.sleep(3600)
            tr = time.perf_counter()
            grads, local_sq = self._all_reduce_mean(tuple(acc))
            _sync()  # the all-reduce, including the wait for the slowest peer
            comm = time.perf_counter() - tr  # includes waiting for the slowest peer
            inv = 1.0 / self.scaler.scale
            grads = [g * inv for g in grads]
            sq = ops.stack([ops.sum(grads[i] * grads[i]) for i, r in enumerate(self.reduced) if r]).sum()
            if local_sq is not None:
                sq = sq + local_sq * (inv * inv)
            grad_norm = float(ops.sqrt(sq).asnumpy())
            finite = math.isfinite(grad_norm)
            scale_used = self.scaler.scale
            applied = self.scaler.update(finite)
            if applied:
                coef = min(1.0, t.grad_clip / (grad_norm + 1e-6))
                if coef < 1.0:
                    grads = [g * coef for g in grads]
                self.opt(tuple(grads))
            loss_val = loss_sum  # each micro-batch already contributed loss / grad_accum
            mem = self.inj.get("mem-leak", self.rank)
            if mem is not None:
                leak.append(bytearray(b"\x01" * (mem["mb"] << 20)))  # touched pages: real RSS growth
            step_time = time.perf_counter() - t0
            epoch = (step - 1) * t.grad_accum // per_epoch + 1
            # MindSpore LossMonitor's exact format (parsed as progress); extra fields on the next line.
            log(f"epoch: {epoch} step: {step}, loss is {loss_val}")
            log(f"rank {self.rank} step {step}: lr {lr:.3e} grad_norm {grad_norm:.4f} loss_scale {scale_used:g} "
                f"overflow {not finite} step_time {step_time * 1000:.1f} ms data_wait {data_wait * 1000:.1f} ms")
            self.wd.step(step, loss=loss_val, grad_norm=grad_norm, loss_scale=scale_used, overflow=not finite,
                         step_time=step_time, data_wait=data_wait, compute_time=compute, comm_time=comm, lr=lr)
            if step % self.args.checksum_every == 0:
                self.wd.checksum_params(step, self.net.trainable_params())
            if step % t.save_every == 0 or step == steps:
                self.wd.phase("save", step)
                self._save(step)
            if profiler is not None and step == window[1]:
                profiler.stop()
                profiler.analyse()
                profiler = None

    def _profiler(self) -> tuple[Any, tuple[int, int]]:
        if not self.args.profile:
            return None, (0, 0)
        a, _, b = self.args.profile.partition("-")
        window = (int(a), int(b or a))
        from mindspore import Profiler

        out = self.run_dir / "profile"
        return Profiler(start_profile=False, output_path=str(out)), window


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    trainer: Trainer | None = None
    try:
        trainer = Trainer(args)
        trainer.build()
        trainer.train()
    except BaseException as exc:  # record what killed the rank, then fail with the real error
        if trainer is not None:
            trainer.wd.exception(exc)
            trainer.wd.close("failed")
        raise
    trainer.wd.close("ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
