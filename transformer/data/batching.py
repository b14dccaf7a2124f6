"""Token ids -> padded tensors, and a length-bucketed batch sampler."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch
from torch import Tensor

PAD_ID, START_ID, END_ID = 0, 1, 2


@dataclass(frozen=True)
class Batch:
    """Encoder input (B, S), decoder input (B, T) starting with <s>, and targets (B, T) ending with </s>."""

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor

    @property
    def n_target_tokens(self) -> int:
        return int((self.tgt_out != PAD_ID).sum())

    def to(self, device: torch.device) -> "Batch":
        """The same batch on `device` (itself when it is there already)."""
        if self.src.device == device:
            return self
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device))


def pad(seqs: Sequence[Sequence[int]], length: int | None = None) -> Tensor:
    """Right-pad id lists with PAD_ID into a (B, T) long tensor."""
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    width = max(int(lengths.max(initial=0)) if length is None else length, 1)
    out = np.full((len(seqs), width), PAD_ID, dtype=np.int64)
    out[np.arange(width)[None, :] < lengths[:, None]] = np.fromiter(
        (i for s in seqs for i in s), dtype=np.int64, count=int(lengths.sum()))
    return torch.from_numpy(out)


def source_ids(ids: Sequence[int]) -> list[int]:
    """What the encoder sees: the tokens followed by </s>."""
    return [*ids, END_ID]


def make_batch(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> Batch:
    """Build a batch from token id lists (no specials): adds </s> to sources, <s>/</s> around targets."""
    return Batch(src=pad([source_ids(s) for s in src]),
                 tgt_in=pad([[START_ID, *t] for t in tgt]),
                 tgt_out=pad([[*t, END_ID] for t in tgt]))


class BucketSampler:
    """Endless shuffled batches of similar lengths (little padding), deterministic given the seed."""

    def __init__(self, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], batch_size: int,
                 seed: int = 0, pool_batches: int = 50) -> None:
        if not src:
            raise ValueError("no training examples")
        self.src, self.tgt = src, tgt
        self.batch_size = min(batch_size, len(src))
        self.pool = self.batch_size * pool_batches
        self.rng = random.Random(seed)

    def epoch(self) -> list[list[int]]:
        """The next epoch's batches as example indices: every example exactly once, similar lengths together."""
        n = len(self.src)
        order = list(range(n))
        self.rng.shuffle(order)
        batches = []
        for start in range(0, n, self.pool):
            chunk = sorted(order[start: start + self.pool], key=lambda i: (len(self.src[i]), len(self.tgt[i])))
            batches += [chunk[j: j + self.batch_size] for j in range(0, len(chunk), self.batch_size)]
        self.rng.shuffle(batches)
        return batches

    def __iter__(self) -> Iterator[Batch]:
        while True:
            for idx in self.epoch():
                yield make_batch([self.src[i] for i in idx], [self.tgt[i] for i in idx])
