"""Charts of an encoder-only model's predictions at the masks: one mask's top-k as bars, and how far every head's
attention moved when tokens were masked (layers down, heads across)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

from ..decode import MaskPrediction
from .style import AUTOSIZE, visible_token

if TYPE_CHECKING:
    import torch


def prediction_bars(prediction: MaskPrediction, *, width: int = 260) -> alt.Chart:
    """The top-k at one mask, best first, with each probability as a bar and its tooltip."""
    frame = pd.DataFrame({"rank": range(1, len(prediction.top_k) + 1),
                          "token": [visible_token(t) for t, _, _ in prediction.top_k],
                          "prob": [v for _, _, v in prediction.top_k]})
    title = f"Mask at token {prediction.position}" + (f" (was {visible_token(prediction.original)})"
                                                      if prediction.original else "")
    return alt.Chart(frame, title=title).mark_bar().encode(
        y=alt.Y("token:N", sort=alt.SortField("rank"), title=None, axis=alt.Axis(labelOverlap=False)),  # every token
        x=alt.X("prob:Q", title="probability", scale=alt.Scale(domain=[0, 1])),
        tooltip=["rank:O", "token:N", alt.Tooltip("prob:Q", format=".4f")],
    ).properties(width=width, height=max(60, 22 * len(frame)), autosize=AUTOSIZE)


def head_change_map(frame: pd.DataFrame, kind: str, *, cell: int = 28) -> alt.Chart:
    """Per head of `kind`, the mean total variation between its attention without and with the masks."""
    data = frame[frame["kind"] == kind].assign(Layer=lambda f: f["layer"] + 1, Head=lambda f: f["head"] + 1)
    n_layers, n_heads = int(data["Layer"].max()), int(data["Head"].max())
    return alt.Chart(data, title="How far each head's attention moved (mean total variation per row)").mark_rect(
    ).encode(
        x=alt.X("Head:O"), y=alt.Y("Layer:O"),
        color=alt.Color("change:Q", title="change",
                        scale=alt.Scale(scheme="oranges", domain=[0, max(0.05, float(data["change"].max()))])),
        tooltip=["Layer:O", "Head:O", alt.Tooltip("change:Q", format=".4f")],
    ).properties(width=min(cell * n_heads, 900), height=min(cell * n_layers, 600), autosize=AUTOSIZE)


def js_cluster_map(js: torch.Tensor, order: list[int], n_heads: int, *, cell: int = 12) -> alt.Chart:
    """The Jensen-Shannon divergence between a kind's heads (Clark et al. 2019), heads in cluster order on both axes;
    head n is layer n // n_heads, head n % n_heads, labelled 'L1H2'."""
    labels = [f"L{n // n_heads + 1}H{n % n_heads + 1}" for n in order]
    rows = [{"a": labels[i], "b": labels[j], "js": float(js[a, b])}
            for i, a in enumerate(order) for j, b in enumerate(order)]
    side = min(max(cell * len(order), 320), 560)  # a few heads: cells large enough to read
    return alt.Chart(pd.DataFrame(rows), title=alt.TitleParams(
        "Jensen-Shannon divergence between heads (clustered)", limit=600)).mark_rect(
    ).encode(
        x=alt.X("b:N", sort=labels, title=None, axis=alt.Axis(labelFontSize=8)),
        y=alt.Y("a:N", sort=labels, title=None, axis=alt.Axis(labelFontSize=8)),
        color=alt.Color("js:Q", scale=alt.Scale(scheme="viridis", reverse=True), title="JS (nats)"),
        tooltip=["a:N", "b:N", alt.Tooltip("js:Q", format=".4f")],
    ).properties(width=side, height=side, autosize=AUTOSIZE)
