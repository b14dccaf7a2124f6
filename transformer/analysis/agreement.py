"""Does attention agree with attribution? Per cross-attention head, over the output steps.

For step t, head (l, h)'s cross-attention row t (weights over the source tokens) is compared with the magnitude
of the source tokens' attribution for the token chosen at step t: Spearman rank correlation of the two rows, and
top-1 match (the token the head attends to most is the one that matters most). Both are averaged over steps.
Attention says where a head reads; attribution says what the output depends on. They differ when a head's value
vectors carry little (a head can look hard at a token and contribute nothing), when several heads or layers
mix the information, or when the encoder has already moved a token's content to another position.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import torch
from torch import Tensor

from ..decode import MEAN_HEAD
from .attribution import Attribution
from .heads import per_head_frame


def _ranks(x: Tensor) -> Tensor:
    """Ranks 0..n-1 along the last dimension (exact ties, rare with float weights, broken by position)."""
    return x.argsort(dim=-1, stable=True).argsort(dim=-1).to(x.dtype)


def spearman(a: Tensor, b: Tensor) -> Tensor:
    """Spearman rank correlation of a and b along the last dimension (0 where either row is constant)."""
    ra, rb = _ranks(a.double()), _ranks(b.double())
    ra, rb = ra - ra.mean(-1, keepdim=True), rb - rb.mean(-1, keepdim=True)
    denom = (ra.square().sum(-1) * rb.square().sum(-1)).sqrt()
    return torch.where(denom > 0, (ra * rb).sum(-1) / denom.clamp(min=1e-12), torch.zeros_like(denom))


def agreement_frame(cross: Tensor, attributions: Sequence[Attribution]) -> pd.DataFrame:
    """Per cross-attention head (and head -1, the mean of each layer's heads): mean Spearman and top-1 match.

    `cross` is the trace's (layers, heads, T, S) cross-attention of the output the attributions explain:
    row t is the query that chose output token t.
    """
    if not attributions:
        raise ValueError("no attribution to compare with")
    steps = [a.step for a in attributions]
    if max(steps) >= cross.shape[2] or attributions[0].source.numel() != cross.shape[3]:
        raise ValueError(f"attributions over {attributions[0].source.numel()} source tokens and steps up to "
                         f"{max(steps) + 1} do not match cross-attention of shape {tuple(cross.shape)}")
    attr = torch.stack([a.source.abs() for a in attributions]).double()  # (N, S)
    maps = torch.cat([cross, cross.mean(1, keepdim=True)], dim=1)[:, :, steps].double()  # (L, H+1, N, S)
    rho = spearman(maps, attr.expand_as(maps)).mean(-1)  # (L, H+1)
    top1 = (maps.argmax(-1) == attr.argmax(-1)).double().mean(-1)  # (L, H+1)
    return per_head_frame(spearman=rho, top1=top1)


def agreement_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """The head whose attention agrees best with attribution (by Spearman), with both figures."""
    heads = frame[frame["head"] != MEAN_HEAD]
    best = heads.loc[heads["spearman"].idxmax()]
    return {"best_head": str(best["label"]), "spearman": round(float(best["spearman"]), 4),
            "top1": round(float(best["top1"]), 4)}
