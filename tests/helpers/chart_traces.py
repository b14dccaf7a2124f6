"""Hand-made attention traces for the chart tests: random softmax maps on given tokens, causal decoder rows."""
from __future__ import annotations

import pandas as pd
import torch

from transformer.decode import AttentionTrace

GERMAN = "ich habe gestern abend mit meinen freunden manchmal ein sehr interessantes buch gelesen </s>".split()
ENGLISH = "<s> yesterday evening i sometimes read a very interesting book with my friends".split()


def random_trace(src: list[str], tgt: list[str], layers: int = 2, heads: int = 3, seed: int = 0) -> AttentionTrace:
    """A trace with random rows that sum to 1 (decoder self-attention only over the prefix)."""
    g = torch.Generator().manual_seed(seed)
    s, t = len(src), len(tgt)

    def weights(q: int, k: int) -> torch.Tensor:
        return torch.softmax(torch.randn(layers, heads, q, k, generator=g), -1)

    causal = torch.ones(t, t).tril()
    dec = weights(t, t) * causal
    dec = dec / dec.sum(-1, keepdim=True)
    return AttentionTrace(tuple(src), tuple(tgt), weights(s, s), dec, weights(t, s))


def layer_data(chart, layer: int = 0) -> pd.DataFrame:
    """Data behind one layer of a layered chart (Altair hoists data all layers share to the top)."""
    own = chart.layer[layer].data
    return own if isinstance(own, pd.DataFrame) else chart.data
