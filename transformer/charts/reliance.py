"""Source or prefix, drawn: the share of each decode step's update that came from the source (cross-attention)
against the prefix (decoder self-attention), a detached step in red, the current step outlined
(`transformer.analysis.why.reliance`)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..analysis import Reliance
from .style import visible_token

AUTOSIZE = {"type": "pad", "contains": "padding"}  # the chart grows by its labels and legend


def reliance_frame(found: Reliance) -> pd.DataFrame:
    """One row per step (1-based): its token, source and prefix shares, distance to uniform, detached."""
    return pd.DataFrame([{"step": s.step, "token": visible_token(s.token), "source": s.source, "prefix": s.prefix,
                          "to_uniform": s.to_uniform, "detached": s.detached} for s in found.steps],
                        columns=["step", "token", "source", "prefix", "to_uniform", "detached"])


def reliance_chart(found: Reliance, current: int, max_width: int) -> alt.LayerChart:
    """The source share of every step as bars (a detached step in red), step `current` (1-based) outlined; 26 px a
    step, between 200 and `max_width` pixels wide."""
    frame = reliance_frame(found)
    width = int(min(max_width, max(200, 26 * len(frame))))
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X("step:O", title="step", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("source:Q", title="share from the source", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        color=alt.condition("datum.detached", alt.value("#d62728"), alt.value("#4c78a8")),
        tooltip=["step:O", "token:N", alt.Tooltip("source:Q", format=".1%"), alt.Tooltip("prefix:Q", format=".1%"),
                 alt.Tooltip("to_uniform:Q", title="distance to uniform", format=".2f"), "detached:N"])
    mark = alt.Chart(frame[frame["step"] == current]).mark_bar(filled=False, stroke="black", strokeWidth=2).encode(
        x="step:O", y="source:Q")
    return alt.layer(bars, mark).properties(width=width, height=160, title="Share from the source at each step",
                                          autosize=AUTOSIZE)
