"""Does attention agree with attribution? Per cross-attention and decoder self-attention head, over the output steps.

For step t, head (l, h)'s cross-attention row t (weights over the source tokens) is compared with the magnitude
of the source tokens' attribution for the token chosen at step t: Spearman rank correlation of the two rows, and
top-1 match (the token the head attends to most is the one that matters most). Both are averaged over steps.
Decoder self-attention is compared the same way with the attribution to the decoder inputs of step t (the start
token and the earlier outputs: row t's keys 0..t), over the steps with at least two decoder inputs (step 1 has
only the start token, so nothing to rank).
Attention says where a head reads; attribution says what the output depends on. They differ when a head's value
vectors carry little (a head can look hard at a token and contribute nothing), when several heads or layers
mix the information, or when the encoder has already moved a token's content to another position.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import torch
from torch import Tensor

from ...decode import MEAN_HEAD
from ..heads.statistics import per_head_frame
from .attribution import Attribution


def _ranks(x: Tensor) -> Tensor:
    """Ranks 0..n-1 along the last dimension (exact ties, rare with float weights, broken by position)."""
    return x.argsort(dim=-1, stable=True).argsort(dim=-1).to(x.dtype)


def spearman(a: Tensor, b: Tensor) -> Tensor:
    """Spearman rank correlation of a and b along the last dimension (0 where either row is constant)."""
    ra, rb = _ranks(a.double()), _ranks(b.double())
    ra, rb = ra - ra.mean(-1, keepdim=True), rb - rb.mean(-1, keepdim=True)
    denom = (ra.square().sum(-1) * rb.square().sum(-1)).sqrt()
    return torch.where(denom > 0, (ra * rb).sum(-1) / denom.clamp(min=1e-12), torch.zeros_like(denom))


def agreement_frame(attention: Tensor, attributions: Sequence[Attribution], kind: str = "cross",
                    step_offset: int = 0) -> pd.DataFrame:
    """Per head of `kind` (and head -1, the mean of each layer's heads): mean Spearman and top-1 match.

    `attention` is the trace's (layers, heads, T, K) attention of that kind for the output the attributions explain
    (row t is the query that chose output token t): cross-attention (K = source tokens) compared with the source
    attribution, or decoder self-attention (K = T decoder inputs) compared with the decoder-input attribution.
    """
    if not attributions:
        raise ValueError("no attribution to compare with")
    if kind == "cross":
        return _cross_frame(attention, attributions)
    if kind == "decoder_self":
        return _self_frame(attention, attributions)
    if kind == "self":
        return _causal_frame(attention, attributions, step_offset)
    raise ValueError(f"no attribution to compare {kind!r} attention with; expected 'cross', 'decoder_self' or 'self'")


def _causal_frame(attention: Tensor, attributions: Sequence[Attribution], offset: int) -> pd.DataFrame:
    """A decoder-only model's self-attention: row `offset + t` (keys: the prompt and the tokens generated before
    step t) against the attribution to those same tokens."""
    maps = torch.cat([attention, attention.mean(1, keepdim=True)], dim=1).double()  # (L, H+1, T, T)
    rho, top1 = [], []
    for a in attributions:
        attr = torch.cat([a.source, a.target]).abs().double()  # (P + t,)
        row = maps[:, :, offset + a.step, : attr.numel()]
        if offset + a.step >= maps.shape[2] or row.shape[-1] != attr.numel() or attr.numel() != offset + a.step + 1:
            raise ValueError(f"step {a.step + 1}: attribution over {attr.numel()} tokens does not match "
                             f"self-attention of shape {tuple(attention.shape)} from row {offset}")
        rho.append(spearman(row, attr.expand_as(row)))
        top1.append((row.argmax(-1) == attr.argmax()).double())
    return per_head_frame(spearman=torch.stack(rho).mean(0), top1=torch.stack(top1).mean(0))


def _cross_frame(cross: Tensor, attributions: Sequence[Attribution]) -> pd.DataFrame:
    steps = [a.step for a in attributions]
    if max(steps) >= cross.shape[2] or attributions[0].source.numel() != cross.shape[3]:
        raise ValueError(f"attributions over {attributions[0].source.numel()} source tokens and steps up to "
                         f"{max(steps) + 1} do not match cross-attention of shape {tuple(cross.shape)}")
    attr = torch.stack([a.source.abs() for a in attributions]).double()  # (N, S)
    maps = torch.cat([cross, cross.mean(1, keepdim=True)], dim=1)[:, :, steps].double()  # (L, H+1, N, S)
    rho = spearman(maps, attr.expand_as(maps)).mean(-1)  # (L, H+1)
    top1 = (maps.argmax(-1) == attr.argmax(-1)).double().mean(-1)  # (L, H+1)
    return per_head_frame(spearman=rho, top1=top1)


def _self_frame(decoder_self: Tensor, attributions: Sequence[Attribution]) -> pd.DataFrame:
    """Rows have t + 1 keys at step t, so one step at a time; steps with a single decoder input are left out."""
    usable = [a for a in attributions if a.step >= 1]
    if not usable:
        raise ValueError("decoder self-attention needs an output of at least two steps to compare with attribution")
    if max(a.step for a in usable) >= decoder_self.shape[2]:
        raise ValueError(f"steps up to {max(a.step for a in usable) + 1} do not match decoder self-attention of "
                         f"shape {tuple(decoder_self.shape)}")
    maps = torch.cat([decoder_self, decoder_self.mean(1, keepdim=True)], dim=1).double()  # (L, H+1, T, T)
    rho, top1 = [], []
    for a in usable:
        row = maps[:, :, a.step, : a.step + 1]  # (L, H+1, t+1): keys 0..t, the decoder inputs step t saw
        attr = a.target.abs().double()  # (t+1,)
        if attr.numel() != row.shape[-1]:
            raise ValueError(f"step {a.step + 1}: attribution over {attr.numel()} decoder inputs, attention over "
                             f"{row.shape[-1]}")
        rho.append(spearman(row, attr.expand_as(row)))
        top1.append((row.argmax(-1) == attr.argmax()).double())
    return per_head_frame(spearman=torch.stack(rho).mean(0), top1=torch.stack(top1).mean(0))


def agreement_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """The head whose attention agrees best with attribution (by Spearman), with both figures."""
    heads = frame[frame["head"] != MEAN_HEAD]
    best = heads.loc[heads["spearman"].idxmax()]
    return {"best_head": str(best["label"]), "spearman": round(float(best["spearman"]), 4),
            "top1": round(float(best["top1"]), 4)}
