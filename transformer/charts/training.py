"""Charts of a training run: loss / accuracy curves (Plotly) and the attention timeline of a probe sentence."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..decode import AttentionTrace
from .attention import matrix_frame
from .style import LINE_COLORS


def timeline_frame(snapshots: Sequence[tuple[int, AttentionTrace]], kind: str = "cross", layer: int = 0,
                   head: int | None = None) -> pd.DataFrame:
    """One map per training snapshot, stacked: step, query/key index and (raw) token, weight, masked."""
    columns = ["step", "query_index", "query_token", "key_index", "key_token", "weight", "masked"]
    frames = []
    for step, trace in snapshots:
        frame = matrix_frame(trace, kind, layer, head, visible=False)
        frame.insert(0, "step", int(step))
        frames.append(frame[columns])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _downsample(frame: pd.DataFrame, max_points: int) -> pd.DataFrame:
    """At most max_points evenly spaced rows, always keeping the first and the last."""
    if len(frame) <= max_points:
        return frame
    index = np.unique(np.linspace(0, len(frame) - 1, max_points).round().astype(int))
    return frame.iloc[index]


def training_curves(history: Sequence[dict], evals: Sequence[dict] = (), *, uirevision: str = "train",
                    smoothing: float = 0.8, max_points: int = 2000) -> go.Figure:
    """Loss (top) and accuracy (bottom) against step, validation points overlaid; a user's zoom survives reruns.

    With `smoothing` > 0 the logged values are drawn faintly ("train loss (per step)") under an exponential
    moving average ("train loss"). Lines are thinned to at most `max_points` points; the last step is kept.
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    hist = pd.DataFrame(list(history))
    for metric, row in (("loss", 1), ("accuracy", 2)):
        if hist.empty or metric not in hist:
            continue
        color, name = LINE_COLORS[metric], f"train {metric}"
        if smoothing > 0:
            shown = _downsample(hist.assign(smooth=hist[metric].ewm(alpha=1 - smoothing).mean()), max_points)
            fig.add_trace(go.Scatter(x=shown["step"], y=shown[metric], mode="lines", name=f"{name} (per step)",
                                     line=dict(color=color, width=1), opacity=0.3, showlegend=False,
                                     hoverinfo="skip"), row=row, col=1)
            fig.add_trace(go.Scatter(x=shown["step"], y=shown["smooth"], mode="lines", name=name,
                                     line=dict(color=color, width=2)), row=row, col=1)
        else:
            shown = _downsample(hist, max_points)
            fig.add_trace(go.Scatter(x=shown["step"], y=shown[metric], mode="lines", name=name,
                                     line=dict(color=color, width=1.5)), row=row, col=1)
    ev = pd.DataFrame([e for e in evals if "step" in e])
    for metric, row, name, symbol in (("loss", 1, "valid loss", "circle"),
                                      ("token_accuracy", 2, "valid token accuracy", "circle"),
                                      ("exact_match", 2, "valid exact match", "diamond")):
        if metric in ev:
            color = LINE_COLORS[metric if metric == "exact_match" else f"valid_{metric.split('_')[-1]}"]
            fig.add_trace(go.Scatter(x=ev["step"], y=ev[metric], mode="lines+markers", name=name,
                                     line=dict(color=color, width=1, dash="dot"),
                                     marker=dict(color=color, size=8, symbol=symbol)), row=row, col=1)
    fig.update_yaxes(title_text="loss", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="accuracy", range=[0, 1.02], tickformat=".0%", row=2, col=1)
    fig.update_xaxes(title_text="step", row=2, col=1)
    if not fig.data:
        fig.add_annotation(text="No training steps yet", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                           font=dict(size=14, color="#888"))
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
    fig.update_layout(template="plotly_white", height=480, uirevision=uirevision, hovermode="x unified",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig
