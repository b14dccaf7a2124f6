"""The paper's encoder and decoder layers: attention and feed-forward sublayers with residuals, pre- or post-norm."""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .attention import KVBuffer, MultiHeadAttention
from .config import ModelConfig
from .dropout import Dropout, add_dropout
from .rotary import Rotation


class FeedForward(nn.Module):
    """Position-wise feed-forward: Linear, ReLU, dropout, Linear."""

    def __init__(self, *, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


class _Sublayers(nn.Module):
    """Residual wiring shared by encoder and decoder layers: pre-norm or post-norm."""

    def __init__(self, *, d_model: int, n: int, dropout: float, norm: str) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n))
        self.drop = Dropout(dropout)
        self.pre = norm == "pre"

    def residual(self, i: int, x: Tensor, fn) -> tuple[Tensor, Tensor | None]:
        """x + fn(x) with LayerNorm before fn (pre) or after the sum (post); passes weights through."""
        norm = self.norms._modules[str(i)]  # ModuleList indexing costs ~20 us a call: a decode step has dozens
        out = fn(norm(x) if self.pre else x)
        out, weights = out if isinstance(out, tuple) else (out, None)
        x = add_dropout(x, out, self.drop.p, self.training)
        return (x if self.pre else norm(x)), weights


class EncoderLayer(_Sublayers):
    """Self-attention, then feed-forward, each a residual sublayer."""

    def __init__(self, *, cfg: ModelConfig) -> None:
        super().__init__(d_model=cfg.d_model, n=2, dropout=cfg.dropout, norm=cfg.norm)
        self.self_attn = MultiHeadAttention(d_model=cfg.d_model, n_heads=cfg.n_heads, dropout=cfg.dropout)
        self.ff = FeedForward(d_model=cfg.d_model, d_ff=cfg.d_ff, dropout=cfg.dropout)

    def forward(self, x: Tensor, *, mask: Tensor | None, need_weights: bool, head_mask: Tensor | None = None,
                is_causal: bool = False, cache: KVBuffer | None = None, rotary: Rotation | None = None,
                q_scale: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """`is_causal`, `cache`, `rotary` and `q_scale` serve our decoder-only model, whose layers are these with a
        causal mask (and RoPE, local windows and log-n scaling, when its config says so)."""
        x, w = self.residual(0, x, lambda h: self.self_attn(h, mask=mask, is_causal=is_causal,
                                                            need_weights=need_weights, head_mask=head_mask,
                                                            cache=cache, rotary=rotary, q_scale=q_scale))
        x, _ = self.residual(1, x, self.ff)
        return x, w


class DecoderLayer(_Sublayers):
    """Causal self-attention (over `self_cache` too when decoding step by step), cross-attention to the encoder's
    keys/values, then feed-forward, each a residual sublayer."""

    def __init__(self, *, cfg: ModelConfig) -> None:
        super().__init__(d_model=cfg.d_model, n=3, dropout=cfg.dropout, norm=cfg.norm)
        self.self_attn = MultiHeadAttention(d_model=cfg.d_model, n_heads=cfg.n_heads, dropout=cfg.dropout)
        self.cross_attn = MultiHeadAttention(d_model=cfg.d_model, n_heads=cfg.n_heads, dropout=cfg.dropout)
        self.ff = FeedForward(d_model=cfg.d_model, d_ff=cfg.d_ff, dropout=cfg.dropout)

    def forward(self, x: Tensor, *, cross_kv: tuple[Tensor, Tensor], cross_mask: Tensor | None,
                self_mask: Tensor | None = None, is_causal: bool = False, self_cache: KVBuffer | None = None,
                need_weights: bool = False, head_masks: tuple[Tensor | None, Tensor | None] = (None, None),
                ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        x, ws = self.residual(0, x, lambda h: self.self_attn(
            h, mask=self_mask, is_causal=is_causal, need_weights=need_weights, head_mask=head_masks[0],
            cache=self_cache))
        x, wc = self.residual(1, x, lambda h: self.cross_attn(
            h, kv=cross_kv, mask=cross_mask, need_weights=need_weights, head_mask=head_masks[1]))
        x, _ = self.residual(2, x, self.ff)
        return x, ws, wc
