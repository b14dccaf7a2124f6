"""The store's side of a greedy decode (`greedy_decode(..., keep="store")`, and "auto" past `STORE_ABOVE`): the
prompt goes through the fused path once (logits at its last position only), then each chosen token one row at a
time; every row fed is in the attention store and any tile is recomputed from it, so nothing n × n is made. The
tokens are those of the decode with maps (the model's generation rules, the first of equal probabilities)."""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor

from ..adapters import InspectableModel, build_store, store_chunks
from .trace import AttentionTrace


class StoreFeed:
    """Feeds a decode's inputs through the store's fused forward, keeping every row; the logits come back (V,)."""

    def __init__(self, adapter: InspectableModel, cache: Any, n_source: int) -> None:
        self.adapter, self.cache, self.n_source = adapter, cache, n_source
        self.chunks = store_chunks(adapter)

    def prefill(self, ids: Sequence[int]) -> Tensor:
        """The prompt's ids (its first `n_source` are source ids, ours), logits after the last."""
        return self.adapter.store_feed(torch.tensor([list(ids)]), self.cache, self.chunks, self.n_source)[0]

    def step(self, token: int) -> Tensor:
        """One chosen token, one row."""
        return self.adapter.store_feed(torch.tensor([[token]]), self.cache, self.chunks)[0]

    def trace(self, source_tokens: Sequence[str], labels: Sequence[str], step_offset: int) -> AttentionTrace:
        """The trace holding the store (its maps are made only when a view reads them); `labels` name every row."""
        return AttentionTrace(source_tokens, labels, store=build_store(self.chunks), family=self.adapter.family,
                              head_groups=self.adapter.head_groups(), step_offset=step_offset)
