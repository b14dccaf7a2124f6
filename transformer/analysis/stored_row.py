"""Inside one head for one query row of a long input, from the attention store (no n x n map): the row's q . k
recomputed against every key, its scores through the store's rules, their softmax (which equals the stored tile's
row: the same log-sum-exp), and each key's contribution alpha_j ||W_O^h v_j|| from the value norms the store keeps
(Kobayashi et al. 2020). Memory: one row of keys per head."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..model import AttentionStore
from .head_computation import HeadSelectionError


@dataclass(frozen=True)
class StoredRow:
    """One head's computation for one query row, every key (K = the keys the row's layer holds)."""

    kind: str
    layer: int
    head: int
    row: int  # the query row among the store's rows
    position: int  # the row's position among the keys (a decode step's row sits after the prompt)
    kv_head: int
    query_vector: Tensor  # (Dh,) after any rotation
    dots: Tensor  # (K,) q . k_j
    scale: float
    scores: Tensor  # (K,) the softmax's input: scale * dots, any bias, soft-cap, -inf where masked
    lse: float  # the row's log-sum-exp (the sink's logit included)
    weights: Tensor  # (K,) softmax of the scores
    value_norms: Tensor | None  # (K,) ||W_O^h v_j||; None where the store has none
    contributions: Tensor | None  # (K,) weights * value_norms

    @property
    def n_keys(self) -> int:
        return int(self.weights.shape[0])

    def top(self, k: int = 5, by: str = "weight") -> list[tuple[int, float, float | None]]:
        """The k keys with the largest weight (or contribution): (key, weight, contribution)."""
        values = self.contributions if by == "contribution" and self.contributions is not None else self.weights
        best = torch.topk(values, min(k, self.n_keys)).indices.tolist()
        return [(j, float(self.weights[j]), None if self.contributions is None else float(self.contributions[j]))
                for j in best]


def stored_row(store: AttentionStore, kind: str, layer: int, head: int, row: int) -> StoredRow:
    """Head `head` of `kind` layer `layer` for query row `row` (0-based), recomputed from the store."""
    if kind not in store.layers:
        raise HeadSelectionError(f"no attention kind {kind!r} in this store; it has {', '.join(store.kinds)}")
    if not 0 <= layer < len(store.layers[kind]):
        raise HeadSelectionError(f"no layer {layer} in {kind}: the model has layers 0-{len(store.layers[kind]) - 1}")
    one = store.layer(kind, layer)
    if not 0 <= head < one.n_heads:
        raise HeadSelectionError(f"no head {head} in {kind} layer {layer}: it has heads 0-{one.n_heads - 1}")
    if not 0 <= row < one.n_rows:
        raise HeadSelectionError(f"no query row {row} in {kind}: this input has rows 0-{one.n_rows - 1}")
    heads, rows, keys = torch.tensor([head]), torch.tensor([row]), torch.arange(one.n_keys)
    q = one.queries[head, row].float()
    kv = one.groups[head]
    dots = one.keys[kv].float() @ q
    scores = one.rules.scores(dots[None, None], heads, rows, keys)[0, 0]
    lse = scores.logsumexp(-1)
    if one.rules.sinks is not None:
        lse = torch.logaddexp(lse, one.rules.sinks.float()[head])
    weights = torch.exp(scores - lse).nan_to_num_(0.0)
    norms = None if one.value_norms is None else one.value_norms[head].float()
    return StoredRow(kind, layer, head, row, one.rules.offset + row, kv, q, dots, float(one.rules.scale), scores,
                     float(lse), weights, norms, None if norms is None else weights * norms)
