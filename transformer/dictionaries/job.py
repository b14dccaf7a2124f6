"""A dictionary trained by several processes (torchrun, gloo on the CPU): each reads a contiguous share of the texts,
so that the processes' rows in rank order are the rows one process would read, and `job_rows` agrees where each
share starts; `train_dictionary(..., shard=...)` then sums gradients and statistics over the job."""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor

from ..train import DistEnv
from .training import RowShard


def text_share(n_texts: int, env: DistEnv) -> range:
    """The texts (their indices) this process reads: a contiguous share, the shares in rank order covering all."""
    return range(n_texts * env.rank // env.world, n_texts * (env.rank + 1) // env.world)


def _sum(tensor: Tensor) -> None:
    dist.all_reduce(tensor)


def job_rows(local_rows: int, env: DistEnv) -> RowShard:
    """This process's rows within the job's (inside a started process group): where they start and how many all
    processes hold."""
    counts = torch.zeros(env.world, dtype=torch.int64)
    counts[env.rank] = local_rows
    dist.all_reduce(counts)
    return RowShard(int(counts[:env.rank].sum()), int(counts.sum()), _sum)
