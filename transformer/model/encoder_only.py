"""Our encoder-only transformer (BERT's shape on our blocks): the encoder-decoder's encoder layers (multi-head
attention, feed-forward, pre/post-LN, sinusoidal positions) as one bidirectional stack of `cfg.n_encoder_layers`,
a segment embedding (sentence A / B, as BERT's token types) and a masked-LM head over one joint vocabulary.

It trains on masked tokens with the encoder-decoder's calling convention, so the trainer and its distributed form
drive it unchanged: `forward(src, tgt)` reads the (masked) ids (B, S) and returns logits at every position
(B, S, V); `tgt` is not read (the trainer's targets are the masked positions' original ids, 0 elsewhere:
`transformer.data.masking`). A pair is one input, `A </s> B </s>`; each position's segment comes from the ids
themselves (0 up to and including the first </s>, 1 after), so nothing but the ids travels with a call. Padding
keys are masked, so a padded row reads exactly as it would alone.
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from .config import ModelConfig
from .dropout import Dropout
from .encoder_decoder import sinusoidal_positions
from .layers import EncoderLayer
from .outputs import AttentionMaps, ForwardOutput, HeadMask

KIND = "encoder_self"
SEPARATOR_ID = 2  # </s>: ends sentence A (and B)


def segments_of(ids: Tensor) -> Tensor:
    """Segment of each position (B, S): 0 up to and including the first </s>, 1 after (BERT's token types)."""
    sep = (ids == SEPARATOR_ID).long()
    return (sep.cumsum(-1) - sep).clamp(max=1)


class EncoderOnlyTransformer(nn.Module):
    """One bidirectional stack of `cfg.n_encoder_layers` encoder layers and a masked-LM head."""

    positions: Tensor  # a buffer (sinusoidal_positions)

    TIED_SOURCE = "embed.weight"  # the matrix the tied weights share
    TIED_WEIGHTS = ("generator.weight",)  # the same tensor as embed.weight when tied

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.segment_embed = nn.Embedding(2, cfg.d_model)
        self.register_buffer("positions", sinusoidal_positions(cfg.max_len, cfg.d_model), persistent=False)
        self.drop = Dropout(cfg.dropout)
        self.layers: Any = nn.ModuleList(  # EncoderLayers (items of a ModuleList read as Module)
            EncoderLayer(cfg=cfg) for _ in range(cfg.n_encoder_layers))
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm == "pre" else nn.Identity()
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
        self.scale = math.sqrt(cfg.d_model)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        for emb in (self.embed, self.segment_embed):
            nn.init.normal_(emb.weight, std=cfg.d_model ** -0.5)
        with torch.no_grad():
            self.embed.weight[cfg.pad_id].zero_()
        if cfg.tie_embeddings:
            self.generator.weight = self.embed.weight

    def embeddings(self, ids: Tensor) -> Tensor:
        """What the first layer reads: token embedding x sqrt(d) + position + segment; (B, S, D)."""
        s = ids.size(1)
        if s > self.cfg.max_len:
            raise ValueError(f"sequence of {s} tokens is longer than max_len {self.cfg.max_len}")
        x = self.embed(ids) * self.scale + self.positions[:s] + self.segment_embed(segments_of(ids))
        return self.drop(x)

    def _run(self, src: Tensor, need_weights: bool, head_mask: HeadMask | None) -> tuple[Tensor, list[Tensor]]:
        keep = src != self.cfg.pad_id  # (B, S)
        mask = None if bool(keep.all()) else keep[:, None, None, :]  # (B, 1, 1, S) padding keys hidden
        x = self.embeddings(src)
        maps = []
        for i, layer in enumerate(self.layers):
            hm = None if head_mask is None or KIND not in head_mask else head_mask[KIND][i]
            x, w = layer(x, mask=mask, need_weights=need_weights, head_mask=hm)
            maps.append(w)
        return self.generator(self.norm(x)), maps  # (B, S, V)

    def forward(self, src: Tensor, tgt: Tensor | None = None) -> Tensor:
        """Masked-LM logits (B, S, V) at every position of `src` (B, S); `tgt` is not read."""
        return self._run(src, False, None)[0]

    def forward_with_attention(self, src: Tensor, tgt: Tensor | None = None, head_mask: HeadMask | None = None
                               ) -> ForwardOutput:
        """Logits (B, S, V) and every layer's (B, H, S, S) bidirectional self-attention ("encoder_self")."""
        logits, maps = self._run(src, True, head_mask)
        return ForwardOutput(logits, AttentionMaps(by_kind={KIND: tuple(maps)}))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
