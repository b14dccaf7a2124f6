"""Data-parallel sharding: each rank takes its share of every global length-bucketed batch."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from .batching import PAD_ID, Batch, BucketSampler, make_batch


def rank_share(indices: Sequence[int], rank: int, world: int) -> list[int]:
    """Rank `rank`'s part of one global batch: every `world`-th example from position `rank` (disjoint, complete)."""
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not in 0..{world - 1}")
    return list(indices[rank::world])


class ShardedBucketSampler:
    """Endless per-rank batches: the global batches of a `BucketSampler(batch_size * world)`, split across ranks.

    All ranks draw the same global batches (same seed), so a global step sees exactly the examples one process
    with the global batch size would see; each rank gets every `world`-th of them, which keeps the ranks' shares
    of similar length (no rank waits long for another). A global batch with fewer examples than ranks (only the
    last one of a tiny epoch) gives the ranks left over a copy of its first example whose targets are all padding,
    so it counts for nothing: no example is seen twice or dropped.
    """

    def __init__(self, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], batch_size: int, *,
                 rank: int, world: int, seed: int = 0, pool_batches: int = 50) -> None:
        rank_share([], rank, world)  # validates rank and world
        self.src, self.tgt, self.rank, self.world = src, tgt, rank, world
        self.global_sampler = BucketSampler(src, tgt, batch_size * world, seed=seed, pool_batches=pool_batches)

    def epoch(self) -> list[list[int]]:
        """This rank's batches (example indices) of the next epoch; empty lists where it has no share."""
        return [rank_share(idx, self.rank, self.world) for idx in self.global_sampler.epoch()]

    def __iter__(self) -> Iterator[Batch]:
        while True:
            for global_idx in self.global_sampler.epoch():
                idx = rank_share(global_idx, self.rank, self.world)
                if idx:
                    yield make_batch([self.src[i] for i in idx], [self.tgt[i] for i in idx])
                else:
                    first = make_batch([self.src[global_idx[0]]], [self.tgt[global_idx[0]]])
                    yield Batch(first.src, first.tgt_in, torch.full_like(first.tgt_out, PAD_ID))
