"""Dictionaries for tests: random ones of any size and activation, weights at a scale where many features fire."""
from __future__ import annotations

import torch

from transformer.dictionaries import Dictionary, Site


def random_dictionary(site: Site, d_in: int, n_features: int, activation: str = "relu", seed: int = 0,
                      k: int = 4) -> Dictionary:
    """A dictionary of unit-norm random rows whose encoder fires about half its features on a typical input."""
    gen = torch.Generator().manual_seed(seed)
    w_dec = torch.randn(n_features, d_in, generator=gen)
    w_dec = w_dec / w_dec.norm(dim=1, keepdim=True)
    w_enc = w_dec.T.clone() + 0.1 * torch.randn(d_in, n_features, generator=gen)
    b_enc = 0.1 * torch.randn(n_features, generator=gen)
    b_dec = 0.1 * torch.randn(d_in, generator=gen)
    threshold = 0.05 * torch.rand(n_features, generator=gen) if activation == "jumprelu" else None
    return Dictionary(site, w_enc, b_enc, w_dec, b_dec, activation, k if activation == "topk" else None, threshold)
