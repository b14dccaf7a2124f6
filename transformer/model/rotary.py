"""Rotary position embedding (RoPE, as Llama applies it): each pair of query and key dimensions (i, i + Dh/2) is
rotated by the position times that pair's frequency, so a query-key product depends on their distance."""
from __future__ import annotations

import torch
from torch import Tensor

from .shapes import meta_default

ROPE_BASE = 10000.0
Rotation = tuple[Tensor, Tensor]  # cos and sin, (B, 1, T, Dh) each


def inverse_frequencies(head_dim: int, base: float = ROPE_BASE) -> Tensor:
    """The (Dh / 2,) frequencies base^(-2i / Dh)."""
    if meta_default():  # a model built for its shapes
        return torch.empty((head_dim + 1) // 2)
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))


def rotation(positions: Tensor, inv_freq: Tensor, dtype: torch.dtype) -> Rotation:
    """cos and sin (B, 1, T, Dh) of the angles position x frequency for positions (B, T) (the halves repeated)."""
    angles = positions.to(inv_freq.dtype)[..., None] * inv_freq  # (B, T, Dh/2), in float32
    angles = torch.cat([angles, angles], dim=-1)[:, None]  # (B, 1, T, Dh)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) over the last dimension's halves."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rotation(x: Tensor, rot: Rotation) -> Tensor:
    """Queries or keys (B, H, T, Dh) rotated by `rot`."""
    cos, sin = rot
    return x * cos + rotate_half(x) * sin
