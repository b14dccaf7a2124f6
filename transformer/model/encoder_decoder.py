"""The encoder-decoder transformer of "Attention Is All You Need": nn.Modules only, no I/O.

Attention weights are computed only when asked for and are returned, never stored on a module: models are
shared across sessions and threads by the app.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import ModelConfig
from .outputs import AttentionMaps, EncoderOutput, ForwardOutput, HeadMask, StepOutput

_MASK_LEVELS = 1 << 16  # a kept/dropped draw is one 16-bit slice of a random 64-bit word


def keep_scale(shape: torch.Size, p: float, device: torch.device, dtype: torch.dtype = torch.float32) -> Tensor:
    """The inverted-dropout multiplier: 1 / (1 - p) where an element is kept, 0 where it is dropped (p rounded to a
    multiple of 2^-16, and the scale exact for that p).

    One 64-bit draw of the CPU generator gives four 16-bit slices, so this costs a quarter of the draws of
    `rand_like` (~3x faster on CPU, where the generator is sequential) and far less than `bernoulli_`. The comparison
    writes straight into a float tensor: on CPU a boolean mask, and `where` over one, cost several times a float
    multiply.
    """
    n = math.prod(shape)
    dtype = torch.promote_types(dtype, torch.float32)  # in bf16 the scale itself would be off (1/0.9 -> 1.109)
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(1 << 63), (1 << 63) - 1)
    dropped = round(p * _MASK_LEVELS)
    scale = torch.empty(shape, dtype=dtype, device=device)
    torch.ge(words.view(torch.int16)[:n].view(shape), dropped - _MASK_LEVELS // 2, out=scale)
    return scale.mul_(_MASK_LEVELS / (_MASK_LEVELS - dropped))


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Inverted dropout; the distribution of F.dropout (to 2^-16 in p), several times faster on CPU."""
    if not training or p == 0.0:
        return x
    return (x * keep_scale(x.shape, p, x.device, x.dtype)).to(x.dtype)


def add_dropout(x: Tensor, y: Tensor, p: float, training: bool) -> Tensor:
    """x + dropout(y): one fused multiply-add while training."""
    if not training or p == 0.0:
        return x + y
    return torch.addcmul(x, y, keep_scale(y.shape, p, y.device, y.dtype)).to(torch.promote_types(x.dtype, y.dtype))


class Dropout(nn.Module):
    """nn.Dropout with the fast CPU mask above."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)


def attention_weights(q: Tensor, k: Tensor, mask: Tensor | None, is_causal: bool = False) -> Tensor:
    """The explicit softmax(q k^T / sqrt(d)) with masked entries exactly 0; (B, H, Tq, Tk).

    Masks are applied as an additive 0 / -inf bias in the same pass as the scaling (a boolean `masked_fill` over
    the scores costs several float passes on CPU).
    """
    scores = q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    tq, tk = scores.shape[-2:]
    bias = None
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=q.device).masked_fill_(~mask, float("-inf"))
    if is_causal:
        causal = torch.full((tq, tk), float("-inf"), dtype=scores.dtype, device=q.device).triu_(tk - tq + 1)
        bias = causal if bias is None else bias + causal
    scale = 1.0 / math.sqrt(q.size(-1))
    scores = scores * scale if bias is None else torch.add(bias, scores, alpha=scale)
    return scores.softmax(dim=-1)


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, need_weights: bool,
              dropout_p: float = 0.0, is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Scaled dot-product attention; `mask` is boolean, True where a query may attend to a key.

    The output always comes from the same kernel (`F.scaled_dot_product_attention`, or the explicit product
    when attention dropout is on), so asking for the weights never changes the computation: they are
    computed beside it with the explicit softmax.
    """
    if dropout_p > 0.0:  # training with attention dropout: explicit path with the fast dropout mask
        weights = attention_weights(q, k, mask, is_causal)
        return dropout(weights, dropout_p, True) @ v, (weights if need_weights else None)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)  # (B, H, Tq, Dh)
    return out, (attention_weights(q, k, mask, is_causal) if need_weights else None)


class KVBuffer:
    """Preallocated keys/values of one self-attention layer during incremental decoding."""

    def __init__(self, batch: int, heads: int, max_len: int, head_dim: int, like: Tensor) -> None:
        self.k = like.new_empty(batch, heads, max_len, head_dim)
        self.v = like.new_empty(batch, heads, max_len, head_dim)
        self.length = 0

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store new (B, H, t, Dh) keys/values; return views of everything stored so far."""
        end = self.length + k.size(2)
        self.k[:, :, self.length: end] = k
        self.v[:, :, self.length: end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the parameter layout of `nn.MultiheadAttention` (packed in_proj)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.d_model = d_model
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _heads(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, -1).transpose(1, 2)  # (B, H, T, Dh)

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values for `x`, split into heads (used to fill a decoding cache)."""
        w, b = self.in_proj.weight[self.d_model:], self.in_proj.bias[self.d_model:]
        k, v = F.linear(x, w, b).chunk(2, dim=-1)  # (B, T, D) each
        return self._heads(k), self._heads(v)

    def project_q(self, x: Tensor) -> Tensor:
        w, b = self.in_proj.weight[: self.d_model], self.in_proj.bias[: self.d_model]
        return self._heads(F.linear(x, w, b))

    def forward(self, x: Tensor, kv: tuple[Tensor, Tensor] | None = None, mask: Tensor | None = None, *,
                is_causal: bool = False, need_weights: bool = False, head_mask: Tensor | None = None,
                cache: KVBuffer | None = None) -> tuple[Tensor, Tensor | None]:
        """Self-attention over `x` (after earlier positions held in `cache`, if given), or attention from `x`
        to precomputed per-head keys/values `kv`."""
        b, t, d = x.shape
        if kv is None:
            q, k, v = self.in_proj(x).chunk(3, dim=-1)  # (B, T, D) each
            q, k, v = self._heads(q), self._heads(k), self._heads(v)  # (B, H, T, Dh)
            if cache is not None:
                k, v = cache.append(k, v)  # (B, H, past + T, Dh)
        else:
            q, (k, v) = self.project_q(x), kv
        p = self.dropout if self.training else 0.0
        out, weights = attention(q, k, v, mask, need_weights=need_weights, dropout_p=p, is_causal=is_causal)
        if head_mask is not None:
            out = out * head_mask.view(1, -1, 1, 1).to(out.dtype)  # (B, H, Tq, Dh)
        out = out.transpose(1, 2).reshape(b, t, d)  # (B, Tq, D)
        return self.out_proj(out), weights


class FeedForward(nn.Module):
    """Position-wise feed-forward: Linear, ReLU, dropout, Linear."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


class _Sublayers(nn.Module):
    """Residual wiring shared by encoder and decoder layers: pre-norm or post-norm."""

    def __init__(self, d_model: int, n: int, dropout: float, norm: str) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n))
        self.drop = Dropout(dropout)
        self.pre = norm == "pre"

    def residual(self, i: int, x: Tensor, fn) -> tuple[Tensor, Tensor | None]:
        """x + fn(x) with LayerNorm before fn (pre) or after the sum (post); passes weights through."""
        out = fn(self.norms[i](x) if self.pre else x)
        out, weights = out if isinstance(out, tuple) else (out, None)
        x = add_dropout(x, out, self.drop.p, self.training)
        return (x if self.pre else self.norms[i](x)), weights


class EncoderLayer(_Sublayers):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg.d_model, 2, cfg.dropout, cfg.norm)
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor | None, need_weights: bool,
                head_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        x, w = self.residual(0, x, lambda h: self.self_attn(h, mask=mask, need_weights=need_weights,
                                                            head_mask=head_mask))
        x, _ = self.residual(1, x, self.ff)
        return x, w


class DecoderLayer(_Sublayers):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg.d_model, 3, cfg.dropout, cfg.norm)
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)

    def forward(self, x: Tensor, self_cache: KVBuffer | None, self_mask: Tensor | None,
                is_causal: bool, cross_kv: tuple[Tensor, Tensor], cross_mask: Tensor | None,
                need_weights: bool, head_masks: tuple[Tensor | None, Tensor | None] = (None, None),
                ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        x, ws = self.residual(0, x, lambda h: self.self_attn(
            h, None, self_mask, is_causal=is_causal, need_weights=need_weights, head_mask=head_masks[0],
            cache=self_cache))
        x, wc = self.residual(1, x, lambda h: self.cross_attn(
            h, cross_kv, cross_mask, need_weights=need_weights, head_mask=head_masks[1]))
        x, _ = self.residual(2, x, self.ff)
        return x, ws, wc


def sinusoidal_positions(max_len: int, d_model: int) -> Tensor:
    """The paper's fixed sinusoidal position encodings, (max_len, d_model)."""
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


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder transformer; `forward` returns logits, `forward_with_attention` also the weights."""

    TIED_SOURCE = "src_embed.weight"  # the matrix the tied weights share
    TIED_WEIGHTS = ("tgt_embed.weight", "generator.weight")  # the same tensor as src_embed.weight when tied

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.register_buffer("positions", sinusoidal_positions(cfg.max_len, cfg.d_model), persistent=False)
        self.drop = Dropout(cfg.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
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
            x, w = layer(x, mask, need_weights, self._head_mask(head_mask, "encoder_self", i))
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
            x, ws, wc = layer(x, None, self_mask, causal, cross_kv, src_mask, need_weights, hm)
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

        The cache is extended in place; a step sees all earlier positions, so no causal mask is needed.
        """
        x = self._embed(self.tgt_embed, token, offset=cache.length)  # (B, 1, D)
        self_maps, cross_maps = [], []
        for i, layer in enumerate(self.decoder):
            hm = (self._head_mask(head_mask, "decoder_self", i), self._head_mask(head_mask, "cross", i))
            x, ws, wc = layer(x, cache.self_kv[i], None, False, cache.cross_kv[i], src_mask, need_weights, hm)
            self_maps.append(ws)
            cross_maps.append(wc)
        cache.length += 1
        return StepOutput(self.generator(self.decoder_norm(x))[:, -1], tuple(self_maps), tuple(cross_maps))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
