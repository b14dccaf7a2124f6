"""Per-head statistics of a trace: one row per (layer, head), head -1 (`MEAN_HEAD`) for the mean-over-heads map."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..decode import MEAN_HEAD, AttentionTrace, head_label


def per_head_frame(**values: torch.Tensor) -> pd.DataFrame:
    """One row per (layer, head) with its label and a float column per value, from (layers, heads + 1) tensors
    whose last column is the mean of each layer's heads (head -1, `MEAN_HEAD`)."""
    n_layers, n_cols = next(iter(values.values())).shape
    heads = [*range(n_cols - 1), MEAN_HEAD]
    records = [{"layer": layer, "head": head, "label": head_label(head, layer, sep=""),
                **{name: float(v[layer, col]) for name, v in values.items()}}
               for layer in range(n_layers) for col, head in enumerate(heads)]
    return pd.DataFrame.from_records(records).astype({"layer": int, "head": int})


def head_stats(trace: AttentionTrace, kind: str) -> pd.DataFrame:
    """Per (layer, head) entropy (nats), mean row maximum and mean distance from the diagonal; head -1 = mean map.

    Averages are over query rows; masked cells are ignored. For cross-attention the diagonal is scaled,
    query q <-> key q*(S-1)/(T-1), so a monotonic alignment scores 0 even when T != S.
    The head -1 rows describe the mean-over-heads map (not the mean of the per-head numbers).
    """
    w = trace.weights(kind).detach().float().cpu()  # (L, H, Q, K)
    w = torch.cat([w, w.mean(1, keepdim=True)], dim=1)  # (L, H+1, Q, K)
    keep = ~trace.masked(kind)  # (Q, K)
    q, k = keep.shape
    w = w * keep
    q_pos = torch.arange(q, dtype=torch.float32)
    if kind == "cross":
        q_pos = q_pos * ((k - 1) / (q - 1)) if q > 1 else torch.zeros(q)
    distance = (torch.arange(k, dtype=torch.float32)[None, :] - q_pos[:, None]).abs()  # (Q, K)
    entropy = -torch.xlogy(w, w).sum(-1).mean(-1)  # (L, H+1)
    max_weight = w.amax(-1).mean(-1)
    diag = (w * distance).sum(-1).mean(-1)
    n_layers, n_panels = entropy.shape
    heads = [*range(n_panels - 1), MEAN_HEAD]
    return pd.DataFrame({
        "layer": np.repeat(np.arange(n_layers), n_panels), "head": heads * n_layers,
        "entropy": entropy.flatten().numpy(), "max_weight": max_weight.flatten().numpy(),
        "diag_distance": diag.flatten().numpy(),
    })
