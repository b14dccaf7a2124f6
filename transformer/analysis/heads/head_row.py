"""One head's row at any length, through the attention source: its weights over every key and each key's
contribution alpha_j ||W_O^h v_j|| where the source has value norms (Kobayashi et al. 2020); from a store also the
row's q . k recomputed against every key, its scores through the store's rules and their log-sum-exp (the softmax of
the scores equals the stored tile's row). A short input's maps give the weights as the softmax saw them (its q . k
and scores are `head_computation`'s, from the insides). Memory: one row of keys per head, never an n x n map."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ...decode import AttentionTrace
from ...model import AttentionStore
from ..source.attention_source import AttentionSource, attention_source
from .head_computation import HeadSelectionError


@dataclass(frozen=True)
class HeadRow:
    """One head's row, every key (K = the keys the row's layer holds); q . k, scores and the log-sum-exp where the
    source is a store (None from maps)."""

    kind: str
    layer: int
    head: int
    row: int  # the query row among the store's rows
    position: int  # the row's position among the keys (a decode step's row sits after the prompt)
    kv_head: int
    query_vector: Tensor | None  # (Dh,) after any rotation
    dots: Tensor | None  # (K,) q . k_j
    scale: float | None
    scores: Tensor | None  # (K,) the softmax's input: scale * dots, any bias, soft-cap, -inf where masked
    lse: float | None  # the row's log-sum-exp (the sink's logit included)
    weights: Tensor  # (K,) the row's weights (softmax of the scores)
    value_norms: Tensor | None  # (K,) ||W_O^h v_j||; None where the store has none
    contributions: Tensor | None  # (K,) weights * value_norms
    window: int | None = None  # the layer's sliding window, where the store's rules have one

    @property
    def n_keys(self) -> int:
        return int(self.weights.shape[0])

    def top(self, k: int = 5, by: str = "weight") -> list[tuple[int, float, float | None]]:
        """The k keys with the largest weight (or contribution): (key, weight, contribution)."""
        values = self.contributions if by == "contribution" and self.contributions is not None else self.weights
        best = torch.topk(values, min(k, self.n_keys)).indices.tolist()
        return [(j, float(self.weights[j]), None if self.contributions is None else float(self.contributions[j]))
                for j in best]


def head_row(source: AttentionSource | AttentionStore | AttentionTrace, kind: str, layer: int, head: int,
             row: int) -> HeadRow:
    """Head `head` of `kind` layer `layer` for query row `row` (0-based), through the source (a trace's maps or its
    store, at any length)."""
    src = attention_source(source)
    if kind not in src.kinds:
        raise HeadSelectionError(f"no attention kind {kind!r} here; there are {', '.join(src.kinds)}")
    n_layers, n_heads, n_rows, n_keys = src.shape(kind)
    if not 0 <= layer < n_layers:
        raise HeadSelectionError(f"no layer {layer} in {kind}: the model has layers 0-{n_layers - 1}")
    if not 0 <= head < n_heads:
        raise HeadSelectionError(f"no head {head} in {kind} layer {layer}: it has heads 0-{n_heads - 1}")
    if not 0 <= row < n_rows:
        raise HeadSelectionError(f"no query row {row} in {kind}: this input has rows 0-{n_rows - 1}")
    norms = src.value_norms(kind, layer)
    norms = None if norms is None else norms[head].float()
    position = src.offset(kind, layer) + row
    weights = src.tile(kind, layer, head, [row])[0].float()
    contributions = None if norms is None else weights * norms
    parts = src.score_row(kind, layer, head, row)
    if parts is None:
        return HeadRow(kind, layer, head, row, position, src.kv_head(kind, layer, head), None, None, None, None, None,
                       weights, norms, contributions)
    return HeadRow(kind, layer, head, row, position, parts.kv_head, parts.query_vector, parts.dots, parts.scale,
                   parts.scores, parts.lse, weights, norms, contributions, parts.window)
