"""Fast inverted dropout for CPU training: the distribution of `F.dropout`, one random draw per four elements."""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

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
