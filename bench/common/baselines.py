"""The baseline model the training benchmarks race: the usual seq2seq model around `torch.nn.Transformer`."""
from __future__ import annotations

import math

import torch
from torch import nn

from transformer.model import sinusoidal_positions


class TorchTransformerBaseline(nn.Module):
    """The usual seq2seq model around nn.Transformer (embeddings, positions, masks, generator)."""

    def __init__(self, vocab: int, d_model: int = 128, heads: int = 4, layers: int = 1, d_ff: int = 128,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.tgt_embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.register_buffer("pe", sinusoidal_positions(512, d_model), persistent=False)
        self.drop = nn.Dropout(dropout)
        self.transformer = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout, batch_first=True)
        self.generator = nn.Linear(d_model, vocab)
        self.scale = math.sqrt(d_model)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        s = self.drop(self.src_embed(src) * self.scale + self.pe[: src.size(1)])
        t = self.drop(self.tgt_embed(tgt) * self.scale + self.pe[: tgt.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        out = self.transformer(s, t, tgt_mask=causal, src_key_padding_mask=src == 0,
                               tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0, tgt_is_causal=True)
        return self.generator(out)
