"""Aggregate maps (max over heads, attention rollout, cross-attention through the encoder) as heatmaps."""
from __future__ import annotations

from typing import Any

import altair as alt

from ..analysis import AGGREGATES, aggregate_trace
from ..decode import ALL_TITLES as KIND_TITLES  # every family's kinds
from ..decode import AttentionTrace
from .attention import attention_heatmap


def aggregate_title(kind: str, how: str, layer: int, n_layers: int) -> str:
    """e.g. "Cross-attention · attention rollout · decoder layer 6 through the encoder"."""
    if how == "rollout" and kind == "cross":
        which = f"decoder layer {layer + 1} through the encoder"
    elif how == "rollout":
        which = f"layers 1–{layer + 1}" if layer else "layer 1"
    else:
        which = f"layer {layer + 1}"
    return f"{KIND_TITLES[kind]} · {AGGREGATES[how]} · {which}"


def aggregate_heatmap(trace: AttentionTrace, kind: str, how: str, layer: int | None = None,
                      **heatmap: Any) -> alt.LayerChart:
    """`attention_heatmap` of an aggregate ("mean", "max" or "rollout") at `layer` (default the last: for rollout
    the whole stack); other keyword arguments (keys, max_width, max_row, gold, size...) go to the heatmap."""
    agg = aggregate_trace(trace, how)
    n_layers = agg.n_layers(kind)
    layer = n_layers - 1 if layer is None else layer
    if not 0 <= layer < n_layers:
        raise IndexError(f"{kind} has {n_layers} layer(s); layer {layer} does not exist")
    heatmap.setdefault("title", aggregate_title(kind, how, layer, n_layers))
    return attention_heatmap(agg, kind, layer, 0, **heatmap)
