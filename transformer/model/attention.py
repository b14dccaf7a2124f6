"""Scaled dot-product attention that can also return its weights, and the multi-head module built on it.

Attention weights are computed only when asked for and are returned, never stored on a module: models are
shared across sessions and threads by the app.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .dropout import dropout
from .rotary import Rotation, apply_rotation


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
    computed beside it with the explicit softmax. Exception: a single query with the weights asked for (a cached
    decoder step) takes its output from those weights (agrees with SDPA to ~1e-7), which saves a kernel a step.
    """
    if dropout_p > 0.0:  # training with attention dropout: explicit path with the fast dropout mask
        weights = attention_weights(q, k, mask, is_causal)
        return dropout(weights, dropout_p, True) @ v, (weights if need_weights else None)
    if need_weights and q.size(-2) == 1:  # one decoder step: the weights are computed anyway, reuse them
        weights = attention_weights(q, k, mask, is_causal)
        return weights @ v, weights
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)  # (B, H, Tq, Dh)
    return out, (attention_weights(q, k, mask, is_causal) if need_weights else None)


LOCAL_BLOCK = 512  # query rows a local layer's long causal pass reads at a time


def band_mask(n_queries: int, n_keys: int, window: int, device: torch.device | None = None) -> Tensor:
    """(Tq, Tk) bool, True where causal query i (at position Tk - Tq + i) may see key j: j <= i and i - j < window."""
    qi = torch.arange(n_keys - n_queries, n_keys, device=device)[:, None]
    kj = torch.arange(n_keys, device=device)[None, :]
    return (kj <= qi) & (qi - kj < window)


def causal_blocks(q: Tensor, k: Tensor, v: Tensor, window: int | None = None, block: int = LOCAL_BLOCK) -> Tensor:
    """Causal attention of queries that are the last Tq of the Tk keys' positions (a chunk after a cache), with an
    optional sliding window, over one unpadded sequence, a block of query rows at a time, each against only the keys
    it can see: no (Tq, Tk) mask or score matrix (equal to SDPA with `band_mask`)."""
    tq, tk = q.size(-2), k.size(-2)
    out = torch.empty_like(q)
    for start in range(0, tq, block):
        end = min(start + block, tq)
        first = 0 if window is None else max(0, tk - tq + start - window + 1)  # the block's earliest key seen
        last = tk - tq + end  # one past the block's last row's own key
        mask = band_mask(end - start, last - first, last - first if window is None else window, q.device)
        out[..., start:end, :] = F.scaled_dot_product_attention(q[..., start:end, :], k[..., first:last, :],
                                                                v[..., first:last, :], attn_mask=mask)
    return out


class KVBuffer:
    """Preallocated keys/values of one self-attention layer during incremental decoding."""

    def __init__(self, batch: int, heads: int, max_len: int, head_dim: int, like: Tensor) -> None:
        self.k = like.new_empty(batch, heads, max_len, head_dim)
        self.v = like.new_empty(batch, heads, max_len, head_dim)
        self.length = 0

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store new (B, H, t, Dh) keys/values; return views of everything stored so far (doubles when full)."""
        end = self.length + k.size(2)
        if end > self.k.size(2):
            size = max(end, 2 * self.k.size(2))
            for name in ("k", "v"):
                old = getattr(self, name)
                grown = old.new_empty(old.size(0), old.size(1), size, old.size(3))
                grown.narrow(2, 0, self.length).copy_(old.narrow(2, 0, self.length))
                setattr(self, name, grown)
        self.k.narrow(2, self.length, k.size(2)).copy_(k)  # narrow: one view op where indexing makes several
        self.v.narrow(2, self.length, v.size(2)).copy_(v)
        self.length = end
        return self.k.narrow(2, 0, end), self.v.narrow(2, 0, end)

    def select(self, rows: Tensor) -> KVBuffer:
        """A buffer holding rows `rows` (B',) of this one (repeats allowed), for beam search's reordering."""
        out = KVBuffer.__new__(KVBuffer)
        out.k, out.v, out.length = self.k.index_select(0, rows), self.v.index_select(0, rows), self.length
        return out


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the parameter layout of `nn.MultiheadAttention` (packed in_proj)."""

    def __init__(self, *, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.d_model = d_model
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.window: int | None = None  # a local layer's sliding window (set once by its model; the rules read it)

    def _heads(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        if t == 1:  # a decoder step: the same layout without the transpose (one op less, dozens a step)
            return x.view(b, self.n_heads, 1, -1)  # (B, H, 1, Dh)
        return x.view(b, t, self.n_heads, -1).transpose(1, 2)  # (B, H, T, Dh)

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values for `x`, split into heads (used to fill a decoding cache)."""
        w, b = self.in_proj.weight[self.d_model:], self.in_proj.bias[self.d_model:]
        k, v = F.linear(x, w, b).chunk(2, dim=-1)  # (B, T, D) each
        return self._heads(k), self._heads(v)

    def project_q(self, x: Tensor) -> Tensor:
        w, b = self.in_proj.weight[: self.d_model], self.in_proj.bias[: self.d_model]
        return self._heads(F.linear(x, w, b))

    def forward(self, x: Tensor, *, kv: tuple[Tensor, Tensor] | None = None, mask: Tensor | None = None,
                is_causal: bool = False, need_weights: bool = False, head_mask: Tensor | None = None,
                cache: KVBuffer | None = None, rotary: Rotation | None = None,
                q_scale: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Self-attention over `x` (after earlier positions held in `cache`, if given), or attention from `x`
        to precomputed per-head keys/values `kv`; `rotary` rotates this call's queries and keys (RoPE; the cache
        holds rotated keys). `is_causal`: the queries are the last Tq of the keys' positions (after a cache too),
        within a local layer's `window` (a padded call passes both inside `mask` instead); `q_scale` (B, 1, Tq, 1)
        multiplies the queries (log-n scaling)."""
        b, t, d = x.shape
        if kv is None:
            q, k, v = self.in_proj(x).chunk(3, dim=-1)  # (B, T, D) each
            q, k, v = self._heads(q), self._heads(k), self._heads(v)  # (B, H, T, Dh)
            if rotary is not None:
                q, k = apply_rotation(q, rotary), apply_rotation(k, rotary)
            if cache is not None:
                k, v = cache.append(k, v)  # (B, H, past + T, Dh)
        else:
            q, (k, v) = self.project_q(x), kv
        if q_scale is not None:
            q = q * q_scale
        p = self.dropout if self.training else 0.0
        tk, window = k.size(-2), self.window
        if is_causal and mask is None and (window is not None or tk != t):  # a window, or a chunk after a cache
            if not need_weights and p == 0.0 and t > LOCAL_BLOCK:  # a long pass: a block of rows at a time
                return self._merge(causal_blocks(q, k, v, window), head_mask, b, t, d), None
            mask, is_causal = band_mask(t, tk, tk if window is None else window, q.device), False
        out, weights = attention(q, k, v, mask, need_weights=need_weights, dropout_p=p, is_causal=is_causal)
        return self._merge(out, head_mask, b, t, d), weights

    def _merge(self, out: Tensor, head_mask: Tensor | None, b: int, t: int, d: int) -> Tensor:
        """The heads' outputs (B, H, Tq, Dh), after any head mask, through the output projection: (B, Tq, D)."""
        if head_mask is not None:
            out = out * head_mask.view(1, -1, 1, 1).to(out.dtype)  # (B, H, Tq, Dh)
        out = out.reshape(b, t, d) if t == 1 else out.transpose(1, 2).reshape(b, t, d)  # (B, Tq, D)
        return self.out_proj(out)
