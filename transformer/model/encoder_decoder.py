"""The encoder-decoder transformer of "Attention Is All You Need": nn.Modules only, no I/O.

Attention weights are computed only when asked for and are returned, never stored on a module: models are
shared across sessions and threads by the app.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .attention import KVBuffer
from .config import ModelConfig
from .dropout import Dropout
from .layers import DecoderLayer, EncoderLayer
from .outputs import AttentionMaps, EncoderOutput, ForwardOutput, HeadMask, StepOutput
from .shapes import meta_default
from .step_plan import StepPlan, step_plan


def sinusoidal_positions(max_len: int, d_model: int) -> Tensor:
    """The paper's fixed sinusoidal position encodings, (max_len, d_model)."""
    if meta_default():  # a model built for its shapes
        return torch.empty(max_len, d_model)
    pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (L, 1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: d_model // 2])
    return pe


@dataclass
class DecoderCache:
    """Per-layer keys/values for incremental decoding: cross K/V fixed, self K/V growing by one per step."""

    cross_kv: list[tuple[Tensor, Tensor]]
    self_kv: list[KVBuffer]
    length: int = 0
    plan: StepPlan | None = None  # the module-free step, made at the first step (None: the module path)
    planned: bool = False
    # when a decode records the residual stream: per step, [embeddings, after layer 1, ..., after n], each (B, 1, D)
    residuals: list[list[Tensor]] | None = None

    def select(self, rows: Tensor) -> DecoderCache:
        """The cache of batch rows `rows` (B',) (repeats allowed), as beam search reorders it by parent; the step
        plan is made again for the new rows."""
        return DecoderCache([(k.index_select(0, rows), v.index_select(0, rows)) for k, v in self.cross_kv],
                            [kv.select(rows) for kv in self.self_kv], self.length)


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder transformer; `forward` returns logits, `forward_with_attention` also the weights."""

    positions: Tensor  # a buffer (sinusoidal_positions)

    TIED_SOURCE = "src_embed.weight"  # the matrix the tied weights share
    TIED_WEIGHTS = ("tgt_embed.weight", "generator.weight")  # the same tensor as src_embed.weight when tied

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.register_buffer("positions", sinusoidal_positions(cfg.max_len, cfg.d_model), persistent=False)
        self.drop = Dropout(cfg.dropout)
        self.encoder: Any = nn.ModuleList(  # EncoderLayers (items of a ModuleList read as Module)
            EncoderLayer(cfg=cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder: Any = nn.ModuleList(  # DecoderLayers (items of a ModuleList read as Module)
            DecoderLayer(cfg=cfg) for _ in range(cfg.n_decoder_layers))
        pre = cfg.norm == "pre"
        self.encoder_norm = nn.LayerNorm(cfg.d_model) if pre else nn.Identity()
        self.decoder_norm = nn.LayerNorm(cfg.d_model) if pre else nn.Identity()
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
        self.scale = math.sqrt(cfg.d_model)
        self._init_weights()
        if cfg.tie_embeddings:
            self.tgt_embed.weight = self.src_embed.weight
            self.generator.weight = self.src_embed.weight

    def _init_weights(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        for emb in (self.src_embed, self.tgt_embed):
            nn.init.normal_(emb.weight, std=self.cfg.d_model ** -0.5)
            with torch.no_grad():
                emb.weight[self.cfg.pad_id].zero_()

    # -- masks ---------------------------------------------------------------------------------------------
    def src_mask(self, src: Tensor) -> Tensor | None:
        """(B, 1, 1, S) True at real source tokens; None when nothing is padded."""
        keep = src != self.cfg.pad_id
        return None if bool(keep.all()) else keep[:, None, None, :]

    def _embed(self, emb: nn.Embedding, ids: Tensor, offset: int = 0) -> Tensor:
        t = ids.size(1)
        if offset + t > self.cfg.max_len:
            raise ValueError(f"sequence of {offset + t} tokens is longer than max_len {self.cfg.max_len}")
        return self.drop(emb(ids) * self.scale + self.positions[offset: offset + t])  # (B, T, D)

    def _head_mask(self, head_mask: HeadMask | None, kind: str, layer: int) -> Tensor | None:
        return None if head_mask is None or kind not in head_mask else head_mask[kind][layer]

    # -- encoder / decoder ------------------------------------------------------------------------------------
    def _encode(self, src: Tensor, need_weights: bool, head_mask: HeadMask | None
                ) -> tuple[Tensor, Tensor | None, list[Tensor]]:
        mask = self.src_mask(src)
        x = self._embed(self.src_embed, src)
        maps = []
        for i, layer in enumerate(self.encoder):
            hm = self._head_mask(head_mask, "encoder_self", i)
            x, w = layer(x, mask=mask, need_weights=need_weights, head_mask=hm)
            maps.append(w)
        return self.encoder_norm(x), mask, maps  # (B, S, D)

    def encode_with_attention(self, src: Tensor, head_mask: HeadMask | None = None) -> EncoderOutput:
        """Encoder output with its self-attention; `state` is (memory (B, S, D), source mask)."""
        memory, mask, maps = self._encode(src, True, head_mask)
        return EncoderOutput((memory, mask), tuple(maps))

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor | None]:
        """Encoder output (B, S, D) and the source mask to pass to `decode`."""
        memory, mask, _ = self._encode(src, False, None)
        return memory, mask

    def _decode(self, tgt: Tensor, memory: Tensor, src_mask: Tensor | None, need_weights: bool,
                head_mask: HeadMask | None) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        keep = tgt != self.cfg.pad_id  # (B, T)
        if bool(keep.all()):
            self_mask, causal = None, True
        else:
            t = tgt.size(1)
            causal_mask = torch.ones(t, t, dtype=torch.bool, device=tgt.device).tril()
            self_mask, causal = causal_mask & keep[:, None, None, :], False  # (B, 1, T, T)
        x = self._embed(self.tgt_embed, tgt)
        self_maps, cross_maps = [], []
        for i, layer in enumerate(self.decoder):
            cross_kv = layer.cross_attn.project_kv(memory)
            hm = (self._head_mask(head_mask, "decoder_self", i), self._head_mask(head_mask, "cross", i))
            x, ws, wc = layer(x, cross_kv=cross_kv, cross_mask=src_mask, self_mask=self_mask, is_causal=causal,
                              need_weights=need_weights, head_masks=hm)
            self_maps.append(ws)
            cross_maps.append(wc)
        return self.generator(self.decoder_norm(x)), self_maps, cross_maps  # (B, T, V)

    def decode(self, tgt: Tensor, memory: Tensor, src_mask: Tensor | None) -> Tensor:
        """Logits (B, T, V) for decoder inputs `tgt` given the encoder output."""
        return self._decode(tgt, memory, src_mask, False, None)[0]

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Logits (B, T, V) for source ids (B, S) and decoder input ids (B, T)."""
        memory, mask = self.encode(src)
        return self.decode(tgt, memory, mask)

    def forward_with_attention(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None
                               ) -> ForwardOutput:
        """Logits plus every layer's and head's attention weights (explicit softmax path)."""
        memory, mask, enc = self._encode(src, True, head_mask)
        logits, dec, cross = self._decode(tgt, memory, mask, True, head_mask)
        return ForwardOutput(logits, AttentionMaps(tuple(enc), tuple(dec), tuple(cross)))

    def max_new_tokens(self, n_source: int) -> int:
        """How many decoder positions there are, whatever the source."""
        return self.cfg.max_len

    # -- incremental decoding ---------------------------------------------------------------------------------
    def start_cache(self, memory: Tensor) -> DecoderCache:
        """A cache holding each decoder layer's cross-attention keys/values for `memory`."""
        cfg = self.cfg
        return DecoderCache(cross_kv=[layer.cross_attn.project_kv(memory) for layer in self.decoder],
                            self_kv=[KVBuffer(memory.size(0), cfg.n_heads, cfg.max_len, cfg.head_dim, memory)
                                     for _ in self.decoder])

    def decode_step(self, token: Tensor, cache: DecoderCache, src_mask: Tensor | None, *,
                    need_weights: bool = False, head_mask: HeadMask | None = None) -> StepOutput:
        """Feed one token per sequence (B, 1); logits (B, V) and this step's self/cross weights (if asked).

        The cache is extended in place; a step sees all earlier positions, so no causal mask is needed. In eval
        mode with plain modules the step runs as a `StepPlan` (same ops, no module dispatch). Where the cache has a
        `residuals` list, either path appends the step's residual stream to it (no hooks).
        """
        if not cache.planned:
            cache.plan, cache.planned = step_plan(self, cache.cross_kv, src_mask), True
        plan = cache.plan
        if plan is not None and plan.src_mask is src_mask and not self.training:
            logits, planned_self, planned_cross = plan.step(token, cache.self_kv, cache.length, head_mask,
                                                            cache.residuals)
            cache.length += 1
            return StepOutput(logits, planned_self, planned_cross)
        x = self._embed(self.tgt_embed, token, offset=cache.length)  # (B, 1, D)
        self_maps, cross_maps = [], []
        stream = None if cache.residuals is None else [x]
        for i, layer in enumerate(self.decoder):
            hm = (self._head_mask(head_mask, "decoder_self", i), self._head_mask(head_mask, "cross", i))
            x, ws, wc = layer(x, cross_kv=cache.cross_kv[i], cross_mask=src_mask, self_cache=cache.self_kv[i],
                              need_weights=need_weights, head_masks=hm)
            self_maps.append(ws)
            cross_maps.append(wc)
            if stream is not None:
                stream.append(x)
        if stream is not None and cache.residuals is not None:
            cache.residuals.append(stream)
        cache.length += 1
        return StepOutput(self.generator(self.decoder_norm(x))[:, -1], tuple(self_maps), tuple(cross_maps))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
