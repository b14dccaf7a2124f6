"""Per-head statistics of a trace: one row per (layer, head), head -1 (`MEAN_HEAD`) for the mean-over-heads map."""
from __future__ import annotations

from typing import Callable, Sequence

import pandas as pd
import torch

from ...decode import MEAN_HEAD, AttentionTrace, head_label
from ..source.attention_source import AttentionSource, attention_source
from ..source.streamed import LayerSummaries, summarise_layer

STATS_COLUMNS = ("layer", "head", "entropy", "max_weight", "diag_distance")
STATS_RESOLUTION = 64  # the pass's overview cells a side (unused here: they set its blocks of whole cells)


def per_head_frame(**values: torch.Tensor) -> pd.DataFrame:
    """One row per (layer, head) with its label and a float column per value, from (layers, heads + 1) tensors
    whose last column is the mean of each layer's heads (head -1, `MEAN_HEAD`)."""
    n_layers, n_cols = next(iter(values.values())).shape
    heads = [*range(n_cols - 1), MEAN_HEAD]
    records = [{"layer": layer, "head": head, "label": head_label(head, layer, sep=""),
                **{name: float(v[layer, col]) for name, v in values.items()}}
               for layer in range(n_layers) for col, head in enumerate(heads)]
    return pd.DataFrame.from_records(records).astype({"layer": int, "head": int})


def head_stats(trace: AttentionTrace | AttentionSource, kind: str, *,
               progress: Callable[[float], None] | None = None) -> pd.DataFrame:
    """Per (layer, head) entropy (nats), mean row maximum and mean distance from the diagonal; head -1 = mean map.

    Averages are over query rows; masked cells are ignored. For cross-attention the diagonal is scaled,
    query q <-> key q*(S-1)/(T-1), so a monotonic alignment scores 0 even when T != S.
    The head -1 rows describe the mean-over-heads map (not the mean of the per-head numbers). One streamed pass a
    layer (`summarise_layer`) through the trace's source: its maps, or its attention store at any length.
    """
    source = attention_source(trace)
    n_layers = source.shape(kind)[0]
    layers = []
    for layer in range(n_layers):
        step = None if progress is None else (lambda f, i=layer: progress((i + f) / n_layers))
        layers.append(summarise_layer(source, kind, layer, top_k=1, resolution=STATS_RESOLUTION, with_mean=True,
                                      scaled=kind == "cross", progress=step))
    return stats_frame(layers)[list(STATS_COLUMNS)]


def stats_frame(layers: Sequence[LayerSummaries]) -> pd.DataFrame:
    """The head statistics (layer, head, entropy, max_weight, diag_distance, first, local) of each layer's
    summaries, means over rows; a layer summarised `with_mean` gives its last row as head -1 (`MEAN_HEAD`)."""
    frames = []
    for layer, s in enumerate(layers):
        n = s.entropy.shape[0]
        heads = [*range(n - 1), MEAN_HEAD] if s.with_mean else list(range(n))
        frames.append(pd.DataFrame({
            "layer": layer, "head": heads, "entropy": s.entropy.mean(-1).numpy(),
            "max_weight": s.peak.mean(-1).numpy(), "diag_distance": s.distance.mean(-1).numpy(),
            "first": s.first.mean(-1).numpy(), "local": s.local.mean(-1).numpy()}))
    return pd.concat(frames, ignore_index=True).astype({"layer": int, "head": int})
