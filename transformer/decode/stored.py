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
    """Feeds a decode's inputs through the store's fused forward, keeping every row (the loop's `Feed`, one row);
    the logits come back (1, V)."""

    def __init__(self, adapter: InspectableModel, cache: Any, start: Sequence[int], n_source: int) -> None:
        self.adapter, self.cache, self.start, self.n_source = adapter, cache, list(start), n_source
        self.chunks = store_chunks(adapter)

    def prefill(self) -> Tensor:
        """The prompt's ids (its first `n_source` are source ids, ours), logits after the last."""
        return self.adapter.store_feed(torch.tensor([self.start]), self.cache, self.chunks, self.n_source)

    def step(self, tokens: Sequence[int]) -> Tensor:
        """One chosen token, one row."""
        return self.adapter.store_feed(torch.tensor([list(tokens)]), self.cache, self.chunks)

    def trace(self, source_tokens: Sequence[str], labels: Sequence[str], step_offset: int) -> AttentionTrace:
        """The trace holding the store (its maps are made only when a view reads them); `labels` name every row."""
        return AttentionTrace(source_tokens, labels, store=build_store(self.chunks), family=self.adapter.family,
                              head_groups=self.adapter.head_groups(), step_offset=step_offset)
