"""Data-parallel training under torchrun: rank discovery, threads per rank, and a DDP Trainer (gloo or nccl).

One optimiser step is one *global* step: every rank takes its share of the same global batch (per-rank batch x
world size), DistributedDataParallel averages the gradients, and every rank applies the same update. The loss is
normalised by the global number of target tokens, so k global steps equal k steps of one process with the global
batch size. Rank 0 leads: it alone decides when to step and stop (budgets, Ctrl-C), validates and writes
checkpoints; before each step it broadcasts "step" and its training time (so the LR schedule agrees), and at the
end why it stopped. The other ranks follow (`follow`), waiting in that broadcast while rank 0 validates.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Sequence

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from ..data import Batch, ShardedBucketSampler
from .device import backend_for
from .precision import autocast
from .trainer import StepStats, Trainer

REASONS = ("step budget", "time budget", "stopped", "finished",  # why rank 0 ended; sent to the others
           "picture clean")  # the stage demo's rule (train/stage.py: CLEAN)


class PeerLostError(RuntimeError):
    """Another process of a distributed run stopped (crashed or was killed), so this one cannot go on."""


@dataclass(frozen=True)
class DistEnv:
    """Where this process sits in a torchrun job (read from the variables torchrun sets)."""

    rank: int
    world: int
    local_rank: int
    local_world: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def torchrun_env(environ: Mapping[str, str] = os.environ) -> DistEnv | None:
    """The job this process belongs to, or None when not started by torchrun with more than one process."""
    world = int(environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return None
    return DistEnv(int(environ["RANK"]), world, int(environ.get("LOCAL_RANK", "0")),
                   int(environ.get("LOCAL_WORLD_SIZE", str(world))))


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the whole machine)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threads_per_rank(local_world: int, cores: int | None = None) -> int:
    """The rule: the cores of one machine split evenly between its ranks, at least one thread each."""
    return max(1, (cores or available_cores()) // max(local_world, 1))


def start_process_group(env: DistEnv, timeout_s: float = 600.0, *, init_method: str = "env://",
                        cores: int | None = None, device: torch.device | None = None) -> str:
    """Join the job's process group (gloo on CPU, nccl on CUDA) and set intra-op threads by `threads_per_rank`;
    describes it.

    `cores`: how many cores this machine's ranks share (default: this process's CPU affinity). `device`: where this
    process trains (`resolve_device`: cuda:LOCAL_RANK on a GPU machine).
    """
    device = device or torch.device("cpu")
    backend = backend_for(device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend, init_method=init_method, rank=env.rank, world_size=env.world,
                                timeout=timedelta(seconds=timeout_s))
    cores = cores or available_cores()
    threads = threads_per_rank(env.local_world, cores)
    torch.set_num_threads(threads)
    where = "each on the GPU of its local rank (cuda:LOCAL_RANK)" if device.type == "cuda" else "on the CPU"
    return (f"{env.world} processes ({backend}) {where}, {threads} intra-op thread(s) each "
            f"({cores} cores / {env.local_world} processes on this machine)")


def stop_process_group() -> None:
    """Leave the process group if this process joined one."""
    if dist.is_initialized():
        dist.destroy_process_group()


class DistributedTrainer(Trainer):
    """A Trainer whose steps are global: sharded batches, DDP gradient averaging, agreed budgets and stops."""

    def __init__(self, *args: Any, env: DistEnv, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env = env
        ids = [self.device.index] if self.device.type == "cuda" else None
        self.ddp = DistributedDataParallel(self.model, device_ids=ids)  # also copies rank 0's weights to every rank
        torch.manual_seed(self.cfg.seed + env.rank)  # dropout differs between ranks, as between examples

    @classmethod
    def from_trainer(cls, trainer: Trainer, env: DistEnv) -> DistributedTrainer:
        """The same training state (weights, optimizer, step, history) as a distributed trainer."""
        return cls(trainer.task, trainer.model_cfg, trainer.cfg, model=trainer.model, step=trainer.step,
                   elapsed=trainer.elapsed, optimizer_state=trainer.optimizer.state_dict(), history=trainer.history,
                   evals=trainer.evals, callbacks=trainer.callbacks, device=trainer.device, env=env)

    @property
    def global_batch_size(self) -> int:
        return self.cfg.batch_size * self.env.world

    def _sampler(self, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> Iterable[Batch]:
        """This rank's share of the global batches a single process with the global batch size would draw."""
        return ShardedBucketSampler(src, tgt, self.cfg.batch_size, rank=self.env.rank, world=self.env.world,
                                    seed=self.cfg.seed + self.step)

    def loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The global mean loss as value (NaN on every rank if on any) with this rank's share as gradient.

        The second result stands in for the global per-token correctness (its length and sum are the global
        token and correct counts), so the step statistics describe the whole global batch.
        """
        with autocast(self.precision, self.device.type):
            logits = self.ddp(batch.src, batch.tgt_in)  # (B, T, V)
        keep = batch.tgt_out != 0
        total = F.cross_entropy(logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0,
                                label_smoothing=self.cfg.label_smoothing, reduction="sum")
        correct = (logits.argmax(-1) == batch.tgt_out)[keep]
        counts = torch.stack([total.detach().double(), keep.sum().double(), correct.sum().double()])
        self._all_reduce(counts)
        loss_sum, tokens, n_correct = counts.tolist()
        tokens = max(tokens, 1.0)
        # DDP averages gradients over ranks: scaling by world / tokens makes the average the global mean's gradient.
        local = total * (self.env.world / tokens)
        loss = local + (torch.tensor(loss_sum / tokens, dtype=local.dtype, device=local.device) - local.detach())
        return loss, torch.arange(int(tokens)) < int(n_correct)

    def train_step(self) -> StepStats:
        """One global step; rank 0 first tells the others to take it (and the training time the LR uses)."""
        if self.env.is_main:
            self._order(0, self.elapsed)
        return super().train_step()

    def release(self, reason: str) -> None:
        """Rank 0: tell the other ranks that training ended and why (their `follow` returns it)."""
        if self.env.is_main:
            self._order(REASONS.index(reason) + 1, self.elapsed)

    def follow(self) -> str:
        """Ranks other than 0: take a step whenever rank 0 takes one, until it releases them; returns its reason."""
        while True:
            order = torch.zeros(2, dtype=torch.float64, device=self.device)
            self._collective(dist.broadcast, order, src=0)
            code, self.elapsed = int(order[0]), float(order[1])
            if code:
                return REASONS[code - 1]
            self.train_step()

    def run(self, max_steps: int | None = None, max_seconds: float | None = None,
            stop: threading.Event | None = None) -> str:
        """Rank 0 trains within the budgets (as `Trainer.run`: it alone decides, evaluates and stops);
        the other ranks follow it. Every rank returns rank 0's reason."""
        if not self.env.is_main:
            return self.follow()
        reason = super().run(max_steps, max_seconds, stop)
        self.release(reason)
        return reason

    def _order(self, code: int, elapsed: float) -> None:
        order = torch.tensor([code, elapsed], dtype=torch.float64, device=self.device)
        self._collective(dist.broadcast, order, src=0)

    def _all_reduce(self, tensor: torch.Tensor) -> None:
        self._collective(dist.all_reduce, tensor)

    @staticmethod
    def _collective(op: Any, tensor: torch.Tensor, **kwargs: Any) -> None:
        try:
            op(tensor, **kwargs)
        except (RuntimeError, dist.DistError) as exc:
            raise PeerLostError(f"another training process stopped, so this one cannot continue ({exc})") from None
