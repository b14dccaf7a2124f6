"""Token ids -> padded tensors, and a length-bucketed batch sampler."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

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


class PackedIds(Sequence):
    """Many token id lists in one flat int32 array plus offsets: about 4 bytes a token, where a list of Python ints
    takes about 36 (an 8-byte pointer and, above 256, a 28-byte int object). A large corpus's encoded training
    split fits in memory this way; items come back as lists, so a sampler sees plain sequences."""

    def __init__(self, flat: np.ndarray, offsets: np.ndarray) -> None:
        self.flat, self.offsets = flat, offsets
        self.lengths = np.diff(offsets)

    @classmethod
    def encode(cls, encode_many: Callable[[list[str]], list[list[int]]], texts: Iterable[str], limit: int,
               chunk: int = 20_000) -> "PackedIds":
        """Encode `texts` `chunk` at a time (never every list at once), each cut to `limit` ids."""
        parts: list[np.ndarray] = []
        lengths: list[int] = []
        batch: list[str] = []

        def flush() -> None:
            for ids in encode_many(batch):
                ids = ids[:limit]
                parts.append(np.asarray(ids, dtype=np.int32))
                lengths.append(len(ids))
            batch.clear()

        for text in texts:
            batch.append(text)
            if len(batch) >= chunk:
                flush()
        flush()
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        return cls(flat, offsets)

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int) -> list[int]:  # type: ignore[override]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        return self.flat[self.offsets[i]: self.offsets[i + 1]].tolist()

    @property
    def nbytes(self) -> int:
        return self.flat.nbytes + self.offsets.nbytes


def sequence_lengths(seqs: Sequence[Sequence[int]]) -> Sequence[int]:
    """len() of every item (read from a PackedIds without unpacking it)."""
    return seqs.lengths.tolist() if isinstance(seqs, PackedIds) else [len(s) for s in seqs]


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
        # the bucketing order, computed once
        self.keys = list(zip(sequence_lengths(src), sequence_lengths(tgt), strict=True))
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
            chunk = sorted(order[start: start + self.pool], key=self.keys.__getitem__)
            batches += [chunk[j: j + self.batch_size] for j in range(0, len(chunk), self.batch_size)]
        self.rng.shuffle(batches)
        return batches

    def __iter__(self) -> Iterator[Batch]:
        while True:
            for idx in self.epoch():
                yield make_batch([self.src[i] for i in idx], [self.tgt[i] for i in idx])
