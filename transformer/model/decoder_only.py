"""Our decoder-only transformer: the same blocks as the encoder-decoder (multi-head attention, feed-forward,
pre/post-LN, sinusoidal positions or RoPE), one causal stack over the source, a separator and the target.

It trains as a prefix language model with the encoder-decoder's calling convention, so the trainer, evaluation and
batched greedy decoding drive it unchanged: `forward(src, tgt)` reads source ids (B, S) (ending in </s>, the
separator) and decoder inputs (B, T) (starting with <s>) as one sequence and returns the logits of the target
positions only (B, T, V), so the loss covers the target part. Source tokens go through `src_embed`, target tokens
through `tgt_embed` (one matrix when tied), both inside `embed`. Padding inside a batch is skipped: pad keys are
masked and positions count real tokens only, so a padded sequence reads exactly as it would alone. With
`positions="rope"` nothing is added to the tokens: every layer rotates its queries and keys (the cache holds rotated
keys), so `max_len` can be far beyond the table's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .attention import KVBuffer, MultiHeadAttention
from .config import ModelConfig
from .dropout import Dropout
from .encoder_decoder import sinusoidal_positions
from .layers import EncoderLayer
from .outputs import AttentionMaps, ForwardOutput, HeadMask, StepOutput
from .rotary import inverse_frequencies, rotation

KIND = "self"


class JointEmbedding(nn.Module):
    """Source tokens through `src_embed`, target tokens through `tgt_embed`: (B, S + T) ids -> (B, S + T, D)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)

    def forward(self, ids: Tensor, n_source: int) -> Tensor:
        parts = [self.src_embed(ids[:, :n_source])] if n_source else []
        if n_source < ids.size(1):
            parts.append(self.tgt_embed(ids[:, n_source:]))
        return torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]


@dataclass
class PrefixCache:
    """Keys/values of every layer, which positions are real tokens, and how many real tokens each row has read."""

    self_kv: list[KVBuffer]
    keep: Tensor  # (B, positions so far) True at real tokens
    seen: Tensor  # (B,) real tokens so far (the next position)

    @property
    def length(self) -> int:
        return self.keep.size(1)

    def select(self, rows: Tensor) -> PrefixCache:
        """The cache of batch rows `rows` (B',) (repeats allowed), as beam search reorders it by parent."""
        return PrefixCache([kv.select(rows) for kv in self.self_kv], self.keep.index_select(0, rows),
                           self.seen.index_select(0, rows))


class DecoderOnlyTransformer(nn.Module):
    """Decoder-only transformer (`cfg.n_decoder_layers` causal self-attention blocks); a prefix LM."""

    positions: Tensor | None  # a buffer (sinusoidal_positions); None with RoPE
    inv_freq: Tensor | None  # a buffer (RoPE's frequencies); None with the sinusoidal table

    TIED_SOURCE = "embed.src_embed.weight"  # the matrix the tied weights share
    TIED_WEIGHTS = ("embed.tgt_embed.weight", "generator.weight")  # the same tensor as embed.src_embed.weight

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = JointEmbedding(cfg)
        rope = cfg.positions == "rope"
        self.register_buffer("positions", None if rope else sinusoidal_positions(cfg.max_len, cfg.d_model),
                             persistent=False)
        self.register_buffer("inv_freq", inverse_frequencies(cfg.head_dim, cfg.rope_base) if rope else None,
                             persistent=False)
        self.drop = Dropout(cfg.dropout)
        self.layers: Any = nn.ModuleList(  # EncoderLayers (items of a ModuleList read as Module)
            EncoderLayer(cfg=cfg) for _ in range(cfg.n_decoder_layers))
        for i, layer in enumerate(self.layers):  # the local layers' window, read by the score rules
            attn = layer.self_attn
            assert isinstance(attn, MultiHeadAttention)
            attn.window = cfg.window if cfg.is_local(i) else None
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm == "pre" else nn.Identity()
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
        self.scale = math.sqrt(cfg.d_model)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        for emb in (self.embed.src_embed, self.embed.tgt_embed):
            nn.init.normal_(emb.weight, std=cfg.d_model ** -0.5)
            with torch.no_grad():
                emb.weight[cfg.pad_id].zero_()
        if cfg.tie_embeddings:
            self.embed.tgt_embed.weight = self.embed.src_embed.weight
            self.generator.weight = self.embed.src_embed.weight

    def max_new_tokens(self, n_source: int) -> int:
        """How many target positions fit after `n_source` source tokens."""
        return max(self.cfg.max_len - n_source, 0)

    def _run(self, ids: Tensor, n_source: int, cache: PrefixCache | None, need_weights: bool,
             head_mask: HeadMask | None) -> tuple[Tensor, list[Tensor]]:
        """Hidden states -> logits (B, t, V) of `ids` (B, t) after what `cache` holds, and each layer's weights."""
        b, t = ids.shape
        keep = ids != self.cfg.pad_id  # (B, t)
        seen = cache.seen if cache is not None else torch.zeros(b, dtype=torch.long, device=ids.device)
        pos = seen[:, None] + keep.long().cumsum(1) - 1  # positions of real tokens; a pad repeats its neighbour's
        if pos.numel() and int(pos.max()) >= self.cfg.max_len:
            raise ValueError(f"sequence longer than max_len {self.cfg.max_len}")
        x = self.embed(ids, n_source) * self.scale
        rot = None
        if self.inv_freq is not None:
            rot = rotation(pos.clamp(min=0), self.inv_freq, x.dtype)  # (B, 1, t, Dh) each
        else:
            assert self.positions is not None  # sinusoidal positions where there is no RoPE
            x = x + self.positions[pos.clamp(min=0)]
        x = self.drop(x)  # (B, t, D)
        past = cache.keep if cache is not None else keep[:, :0]
        keys = torch.cat([past, keep], dim=1)  # (B, K)
        mask, causal = None, False
        if t > 1 or not bool(keys.all()):
            k = keys.size(1)
            if bool(keys.all()):  # every key real: causal, the chunk's queries the last t positions (no mask)
                causal = True
            else:
                allowed = torch.ones(t, k, dtype=torch.bool, device=ids.device).tril(k - t)  # (t, K) causal
                mask = allowed & keys[:, None, None, :]  # (B, 1, t, K)
                mask = mask | ~mask.any(-1, keepdim=True)  # a row of pads only: let it read anything (ignored)
        local = self._local_mask(pos, keys, mask, causal)
        scales = self._query_scales(pos, x.dtype)
        maps = []
        for i, layer in enumerate(self.layers):
            hm = None if head_mask is None or KIND not in head_mask else head_mask[KIND][i]
            kv = cache.self_kv[i] if cache is not None else None
            near = self.cfg.is_local(i)
            x, w = layer(x, mask=local if near else mask, is_causal=causal,
                         need_weights=need_weights, head_mask=hm, cache=kv,
                         rotary=rot if self.cfg.rotates(i) else None, q_scale=scales[near])
            maps.append(w)
        if cache is not None:
            cache.keep = keys
            cache.seen = seen + keep.long().sum(1)
        return self.generator(self.norm(x)), maps

    def _local_mask(self, pos: Tensor, keys: Tensor, mask: Tensor | None, causal: bool) -> Tensor | None:
        """The local layers' mask (B, 1, t, K): the causal one and |i - j| < window in real-token positions; None
        where there is no window or the call is one unpadded causal pass (the layer applies its window itself)."""
        if not self.cfg.window or (causal and mask is None):
            return None
        key_pos = keys.long().cumsum(1) - 1  # (B, K) each key's position (a pad's is its neighbour's: masked anyway)
        near = (pos[:, :, None] - key_pos[:, None, :]) < self.cfg.window  # (B, t, K)
        if mask is None:  # one unpadded decoder step: every key so far is causal
            return near[:, None]
        return mask & near[:, None]

    def _query_scales(self, pos: Tensor, dtype: torch.dtype) -> dict[bool, Tensor | None]:
        """Log-n scaling's factor (B, 1, t, 1) for the global (False) and local (True) layers: max(1, ln n / ln L)
        with n the keys a query sees (its position + 1, at most the window on a local layer); None where every
        factor is 1."""
        length = self.cfg.logn_length
        out: dict[bool, Tensor | None] = {False: None, True: None}
        if not length or not pos.numel() or int(pos.max()) + 1 <= length:
            return out
        for near in (False, True):
            seen = (pos + 1).clamp(min=1)
            if near and self.cfg.window:
                seen = seen.clamp(max=self.cfg.window)
            if int(seen.max()) > length:
                out[near] = (seen.to(torch.float32).log() / math.log(length)).clamp(min=1.0).to(dtype)[:, None, :, None]
        return out

    def full(self, src: Tensor, tgt: Tensor, need_weights: bool = False, head_mask: HeadMask | None = None
             ) -> tuple[Tensor, list[Tensor]]:
        """Logits of every position (B, S + T, V) of the sequence src + tgt, and each layer's (B, H, S+T, S+T)."""
        return self._run(torch.cat([src, tgt], dim=1), src.size(1), None, need_weights, head_mask)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Logits (B, T, V) of the target positions for source ids (B, S) and decoder inputs (B, T)."""
        return self.full(src, tgt)[0][:, src.size(1):]

    def forward_with_attention(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None
                               ) -> ForwardOutput:
        """Target logits (B, T, V) and every layer's causal self-attention over source + target ("self")."""
        logits, maps = self.full(src, tgt, True, head_mask)
        return ForwardOutput(logits[:, src.size(1):], AttentionMaps(by_kind={KIND: tuple(maps)}))

    # -- incremental decoding (the encoder-decoder's names, so batched greedy decoding runs unchanged) ----------
    def encode(self, src: Tensor) -> tuple[Tensor, None]:
        """No encoder: the source ids themselves are what `start_cache` reads."""
        return src, None

    def empty_cache(self, batch: int) -> PrefixCache:
        """A cache that has read nothing yet (for `feed`)."""
        cfg = self.cfg
        like = self.generator.weight
        room = min(cfg.max_len, 1024)  # the buffers grow past this (a RoPE model's max_len can be 131,072)
        return PrefixCache([KVBuffer(batch, cfg.n_heads, room, cfg.head_dim, like) for _ in self.layers],
                           torch.ones(batch, 0, dtype=torch.bool, device=like.device),
                           torch.zeros(batch, dtype=torch.long, device=like.device))

    def start_cache(self, src: Tensor) -> PrefixCache:
        """A cache that has read the source ids (B, S) (fast path, no weights)."""
        cache = self.empty_cache(src.size(0))
        self._run(src, src.size(1), cache, False, None)
        return cache

    def feed(self, ids: Tensor, cache: PrefixCache, n_source: int = 0, *, need_weights: bool = False,
             head_mask: HeadMask | None = None) -> StepOutput:
        """Feed ids (B, t) (the first `n_source` of them source tokens); logits after the last, this chunk's weights."""
        logits, maps = self._run(ids, n_source, cache, need_weights, head_mask)
        return StepOutput(logits[:, -1], tuple(maps), ())

    def decode_step(self, token: Tensor, cache: PrefixCache, src_mask: Tensor | None = None, *,
                    need_weights: bool = False, head_mask: HeadMask | None = None) -> StepOutput:
        """Feed one target token per sequence (B, 1); logits (B, V) and this step's weights (if asked)."""
        return self.feed(token, cache, 0, need_weights=need_weights, head_mask=head_mask)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
