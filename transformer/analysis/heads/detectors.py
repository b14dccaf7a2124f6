"""The two standard head detectors of decoder self-attention (TransformerLens, Olsson et al. 2022):

- **previous-token score**: the mean weight a query puts on the token right before it (rows 1.. of a causal map);
- **induction score**: on a sequence of random tokens repeated twice, r r, the mean weight each token of the second
  copy puts on the token that followed its earlier occurrence (query at n + j, key at j + 1): the head that
  completes "... A B ... A" with B.

Both are per (layer, head) of the model's causal self-attention kind (a decoder-only model's "self", an
encoder-decoder's "decoder_self"), with head -1 (`MEAN_HEAD`) for the mean-over-heads map.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch
from torch import Tensor

from ...adapters import InspectableModel
from ...decode import InputError
from .statistics import per_head_frame

INDUCTION_LENGTH = 24  # random tokens per copy


def _with_mean(weights: Tensor) -> Tensor:
    """(L, H, Q, K) -> (L, H + 1, Q, K), the mean of each layer's heads last."""
    w = weights.detach().float().cpu()
    return torch.cat([w, w.mean(1, keepdim=True)], dim=1)


def previous_token_scores(weights: Tensor, first_row: int = 1) -> Tensor:
    """(L, H + 1) mean weight of rows q >= max(first_row, 1) on key q - 1, for causal maps (L, H, T, T)."""
    w = _with_mean(weights)
    rows = torch.arange(max(first_row, 1), w.shape[2])
    if rows.numel() == 0:
        raise InputError("a previous-token score needs at least two tokens")
    return w[:, :, rows, rows - 1].mean(-1)


def induction_scores(weights: Tensor, start: int, n: int) -> Tensor:
    """(L, H + 1) mean weight of query start + n + j on key start + j + 1, j = 0..n-2, for a causal map (L, H, T, T)
    over a sequence whose random part r r begins at `start` (each copy `n` tokens)."""
    w = _with_mean(weights)
    j = torch.arange(n - 1)
    return w[:, :, start + n + j, start + j + 1].mean(-1)


@dataclass(frozen=True)
class Detection:
    """Per head: previous-token and induction scores, and the repeated random tokens they were measured on."""

    frame: pd.DataFrame  # layer, head, label, previous_token, induction; head -1 = mean of the layer's heads
    kind: str
    tokens: tuple[str, ...]  # the sequence the model read (its prefix, then r r)
    per_copy: int  # n, the random tokens of each copy of r


def _random_ids(adapter: InspectableModel, n: int, seed: int) -> list[int]:
    """n ids of ordinary tokens (no specials, nothing the model cannot emit), drawn without replacement."""
    banned = set(adapter.unemittable_ids) | set(adapter.end_ids) | {adapter.pad_id, *adapter.start_ids}
    pool = torch.tensor([i for i in range(adapter.vocab_size)
                         if i not in banned and not adapter.id_to_token(i).startswith(("<", "["))])  # no specials
    if pool.numel() < 4:
        raise InputError(f"the model has only {pool.numel()} ordinary tokens: too few for the induction test")
    gen = torch.Generator().manual_seed(seed)
    return pool[torch.randperm(pool.numel(), generator=gen)[:n]].tolist()  # at most the pool: no repeats in r


def _causal_setup(adapter: InspectableModel) -> tuple[Tensor, list[int]]:
    """(source ids (1, S), decoder prefix) for a forward over inputs of our choosing. A decoder-only model reads its
    prompt inside the decoder inputs (`forward` takes the first S of them as the prompt), so its source is the empty
    prompt the prefix is built from; an encoder-decoder's encoder reads something short."""
    if adapter.family.prompt_in_decoder:
        source = adapter.tokenize_source("")
        return torch.tensor([list(source.ids)], dtype=torch.long), adapter.decoder_prefix(source)
    return torch.tensor([adapter.tokenize_source("a").ids]), list(adapter.start_ids)


def detect_heads(adapter: InspectableModel, n: int = INDUCTION_LENGTH, seed: int = 0) -> Detection:
    """Previous-token and induction scores of every head of `adapter`'s causal self-attention, on r r teacher-forced
    after the decoder prefix of an empty prompt (an encoder-decoder's start token; a decoder-only model's BOS, if
    any; ours: <s>): `Detection.tokens` are the tokens the model read, position for position."""
    r = _random_ids(adapter, min(n, (adapter.max_target_len - 2) // 2), seed)
    n = len(r)
    src, prefix = _causal_setup(adapter)
    inputs = [*prefix, *r, *r]
    with adapter.running():
        _, maps = adapter.forward(src, torch.tensor([inputs]))
    kind = adapter.family.decoder_kind
    assert kind is not None, "heads are detected on a model that decodes"
    weights = torch.stack([w[0] for w in maps[kind]])  # (L, H, T, T)
    frame = per_head_frame(previous_token=previous_token_scores(weights, len(prefix) + 1),
                           induction=induction_scores(weights, len(prefix), n))
    return Detection(frame, kind, tuple(adapter.ids_to_tokens(inputs)), n)
