"""Aggregates over heads and layers: max over heads, attention rollout, and cross-attention through the encoder.

Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): per layer the mean over
heads A, the residual connection added as the identity, A' = 0.5·A + 0.5·I, rows renormalised to sum to 1; the
rollout up to layer l is A'_l · A'_(l-1) · … · A'_1. For cross-attention, "through the encoder" is the decoder
layer's mean cross-attention (T, S) times the encoder's rollout over all its layers (S, S): how much each output
position draws on each source *token* once the encoder's own mixing is followed back.
Each aggregate comes back as an `AttentionTrace` with one "head" per layer, so the heatmap builder draws it.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import torch
from torch import Tensor

from ...decode import AttentionTrace
from ..source.attention_source import whole_maps

AGGREGATES = {"mean": "mean over heads", "max": "max over heads", "rollout": "attention rollout"}


def max_over_heads(weights: Tensor) -> Tensor:
    """(L, H, Q, K) -> (L, Q, K): each cell's largest weight over the heads (rows no longer sum to 1)."""
    return weights.amax(1)


def with_residual(weights: Tensor) -> Tensor:
    """(L, H, Q, Q) -> (L, Q, Q): 0.5 · mean over heads + 0.5 · I, rows renormalised."""
    a = weights.float().mean(1)
    a = 0.5 * a + 0.5 * torch.eye(a.shape[-1], dtype=a.dtype)
    return a / a.sum(-1, keepdim=True).clamp(min=1e-30)


def rollout(weights: Tensor) -> Tensor:
    """(L, H, Q, Q) self-attention -> (L, Q, Q): the rollout up to each layer (entry l = A'_l · … · A'_0)."""
    steps = with_residual(weights)
    out, total = [], torch.eye(steps.shape[-1], dtype=steps.dtype)
    for a in steps:
        total = a @ total
        out.append(total)
    return torch.stack(out)


def cross_through_encoder(cross: Tensor, encoder_self: Tensor) -> Tensor:
    """(L_dec, H, T, S) cross and (L_enc, H, S, S) encoder self -> (L_dec, T, S): each decoder layer's mean
    cross-attention composed with the encoder's full rollout (the last decoder layer is the output's view)."""
    return cross.float().mean(1) @ rollout(encoder_self)[-1]


def aggregate_trace(trace: AttentionTrace, how: str) -> AttentionTrace:
    """The trace with each layer's heads replaced by one aggregate map ("mean", "max" or "rollout"); head 0 of
    layer l is the aggregate at layer l (for rollout: through layer l; cross: layer l through the encoder)."""
    if how not in AGGREGATES:
        raise ValueError(f"unknown aggregate {how!r}; expected one of {', '.join(AGGREGATES)}")
    spec = trace.family
    for kind in trace.kinds:  # every layer's whole map: refused in one place past what can be materialised
        whole_maps(trace, "rollout" if how == "rollout" else "aggregate", kind)
    if how == "mean":
        maps = {k: trace.weights(k).float().mean(1) for k in trace.kinds}
    elif how == "max":
        maps = {k: max_over_heads(trace.weights(k).float()) for k in trace.kinds}
    else:
        maps = {k: rollout(trace.weights(k)) for k in trace.kinds if k != spec.cross_kind}
        if spec.cross_kind is not None and spec.encoder_kind is not None:  # cross-attention reads an encoder
            maps[spec.cross_kind] = cross_through_encoder(trace.weights(spec.cross_kind),
                                                          trace.weights(spec.encoder_kind))
        # exact 0 above the diagonal
        assert spec.decoder_kind is not None  # a family with an encoder kind decodes here
        maps[spec.decoder_kind] = maps[spec.decoder_kind] * ~trace.masked(spec.decoder_kind)
    maps = {k: m.unsqueeze(1) for k, m in maps.items()}
    return replace(trace, maps=maps, head_groups={k: (0,) for k in maps})


def aggregate_frame(trace: AttentionTrace, how: str, kind: str | None = None) -> pd.DataFrame:
    """Tidy frame of an aggregate: aggregate, kind, layer, query_index, query_token, key_index, key_token, weight."""
    agg = aggregate_trace(trace, how)
    frame = agg.to_frame(kind, head=0).drop(columns=["head", "masked"])
    frame.insert(0, "aggregate", how)
    return frame


def aggregate_dict(trace: AttentionTrace, how: str) -> dict[str, Any]:
    """An aggregate for the trace JSON: {"aggregate": how, kind: [L][Q][K] nested lists}."""
    agg = aggregate_trace(trace, how)
    return {"aggregate": how, **{k: agg.weights(k)[:, 0].tolist() for k in agg.kinds}}
