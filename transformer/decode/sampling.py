"""Sampling inside step-through: temperature, top-k and top-p with a seed (`greedy_decode(..., sampling=...)`).

Each step's distribution is what `generate(do_sample=True)` samples from, built the same way: the model's rules
(`constrain`: the generation config's logits processors), then the warpers in `generate`'s order and with its
formulas — temperature (logits / T), top-k (every logit below the k-th largest to −∞; ties kept), top-p (sorted
ascending, the tokens whose cumulative probability is ≤ 1 − p dropped, the most probable always kept) — then
softmax and one `torch.multinomial` draw from a generator seeded with the seed. With the same processed
distribution and seed the draws equal `torch.manual_seed(seed); generate(do_sample=True, ...)`'s (tested per
Hugging Face family, tests/library/decode/test_sampling.py). Temperature 0 means greedy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

MAX_TEMPERATURE = 100.0
MAX_SEED = 2**63 - 1
SHOWN = 10  # candidates kept per step after filtering (the trace JSON keeps these, not the vocabulary)


class SamplingError(ValueError):
    """Sampling settings that cannot be used; the message is one line for the user."""


@dataclass(frozen=True)
class Sampling:
    """How each step is drawn: temperature (0: greedy), top-k (0: off), top-p (1: off), and the seed."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def to_dict(self) -> dict:
        return {"temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p, "seed": self.seed}


def check_sampling(sampling: Sampling, vocab_size: int) -> Sampling:
    """The settings themselves, or SamplingError naming the one that is out of range."""
    t, k, p, seed = sampling.temperature, sampling.top_k, sampling.top_p, sampling.seed
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 <= t <= MAX_TEMPERATURE:
        raise SamplingError(f"The temperature must be a number from 0 (greedy) to {MAX_TEMPERATURE:g}, got {t!r}.")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= vocab_size:
        raise SamplingError(f"Top-k must be a whole number from 0 (off) to the vocabulary's {vocab_size:,} tokens, "
                            f"got {k!r}.")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0 < p <= 1:
        raise SamplingError(f"Top-p must be a number above 0 and at most 1 (1: off), got {p!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise SamplingError(f"The seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}.")
    return sampling


def warp(scores: Tensor, sampling: Sampling) -> Tensor:
    """Temperature, then top-k, then top-p, as `generate`'s warpers compute them; scores (1, V) -> (1, V)."""
    return _warp(scores, sampling)[0]


def _count(mask: Tensor) -> int:
    return int(mask.view(torch.uint8).sum(dtype=torch.int32))  # a bool tensor's sum is ~2x slower


def _warp(scores: Tensor, sampling: Sampling) -> tuple[Tensor, int]:
    """`warp`'s scores and how many tokens they keep (finite)."""
    if sampling.temperature != 1.0:
        scores = scores / sampling.temperature
    top = None
    if sampling.top_k:
        k = min(sampling.top_k, scores.size(-1))
        top = torch.topk(scores, k)  # values best first
        scores = scores.masked_fill(scores < top[0][..., -1, None], float("-inf"))
    kept = _count(scores > float("-inf"))
    if sampling.top_p >= 1.0:
        return scores, kept
    if top is not None and kept == top[0].size(-1) and not bool((top[0][..., 1:] == top[0][..., :-1]).any()):
        # k survivors, no two equal: `torch.sort`'s ascending order is the -inf block, then the top-k reversed; the
        # same values, so the same softmax and cut, without sorting the vocabulary (equal scores: sort's own order)
        sorted_logits = torch.cat([scores.new_full((1, scores.size(-1) - kept), float("-inf")), top[0].flip(-1)], -1)
        remove = sorted_logits.softmax(dim=-1).cumsum(dim=-1)[..., -kept:] <= (1 - sampling.top_p)
        remove[..., -1:] = 0
        return scores.index_fill(-1, top[1].flip(-1)[remove], float("-inf")), kept - _count(remove)
    sorted_logits, sorted_indices = torch.sort(scores, descending=False)
    remove = sorted_logits.softmax(dim=-1).cumsum(dim=-1) <= (1 - sampling.top_p)
    remove[..., -1:] = 0
    scores = scores.masked_fill(remove.scatter(1, sorted_indices, remove), float("-inf"))
    return scores, _count(scores > float("-inf"))


@dataclass(frozen=True)
class SampledStep:
    """What a sampled step drew from: the candidates after temperature and filtering (best first, at most `SHOWN`),
    how many tokens survived the cut, and where the drawn token ranked before and after."""

    top_after: tuple[tuple[str, float], ...]
    kept: int  # tokens left after top-k / top-p: the cut falls after this rank
    rank: int  # of the drawn token in the model's own distribution (1: most probable)
    prob_after: float  # of the drawn token after temperature and filtering

    def to_dict(self) -> dict:
        return {"top_after": [[t, p] for t, p in self.top_after], "kept": self.kept, "rank": self.rank,
                "prob_after": self.prob_after}


class Sampler:
    """Draws each step's token with one seeded generator for the whole decode."""

    def __init__(self, sampling: Sampling) -> None:
        self.sampling = sampling
        self.generator = torch.Generator().manual_seed(sampling.seed)

    def draw(self, logits: Tensor, id_to_token) -> tuple[int, SampledStep]:
        """The drawn id from constrained logits (V,), and what it was drawn from."""
        raw = logits.float()
        scores, kept = _warp(raw[None], self.sampling)  # (1, V)
        probs = scores.softmax(-1)
        token = int(torch.multinomial(probs, num_samples=1, generator=self.generator)[0, 0])
        top_p, top_i = probs[0].topk(min(SHOWN, kept))
        rank = _count(raw > raw[token]) + 1
        top = tuple((id_to_token(int(i)), float(p)) for i, p in zip(top_i.tolist(), top_p.tolist(), strict=True))
        return token, SampledStep(top, kept, rank, float(probs[0, token]))
