"""A model's positions as a picture (`adapters.position_scheme`): a table's first positions × dimensions, T5's bias
per bucket and head, or RoPE's frequency per dimension pair."""
from __future__ import annotations

from typing import Sequence

import altair as alt
import pandas as pd

from ..adapters import LEARNED, RELATIVE, ROTARY, PositionScheme
from .style import AUTOSIZE

MAX_POSITIONS = 64
MAX_DIMS = 64


def position_frame(scheme: PositionScheme) -> pd.DataFrame:
    """The numbers the picture draws: (position, dimension, value), (bucket, head, bias) or (pair, frequency)."""
    t = scheme.table
    if scheme.kind == ROTARY:
        return pd.DataFrame({"pair": range(t.shape[0]), "frequency": t.tolist()})
    if scheme.kind == RELATIVE:
        return pd.DataFrame([{"bucket": b, "head": f"H{h + 1}", "bias": float(t[b, h])}
                             for b in range(t.shape[0]) for h in range(t.shape[1])])
    rows = t[scheme.offset: scheme.offset + MAX_POSITIONS, :MAX_DIMS]
    return pd.DataFrame([{"position": p, "dimension": d, "value": float(rows[p, d])}
                         for p in range(rows.shape[0]) for d in range(rows.shape[1])])


def position_picture(scheme: PositionScheme, model: str, layers: Sequence[int] = ()) -> alt.Chart:
    """The picture of `scheme`, titled with the model and what it shows; `layers` (0-based) where only those layers
    rotate (`analysis.rotating_layers`: the others are global, with no positions)."""
    frame = position_frame(scheme)
    if scheme.kind == ROTARY:
        where = f" (layer{'s' if len(layers) > 1 else ''} {', '.join(str(i + 1) for i in layers)})" if layers else ""
        return alt.Chart(frame, title=f"{model} · RoPE{where}: rotation frequency of each dimension pair", width=520,
                         height=200, autosize=AUTOSIZE).mark_bar().encode(
            # not stacked: a stack starts at 0, which a log scale cannot draw (the chart was blank, no axis labels)
            x=alt.X("pair:O", title="dimension pair"), y=alt.Y("frequency:Q", scale=alt.Scale(type="log"), stack=None,
                                                                 title="radians per position"),
            tooltip=["pair", alt.Tooltip("frequency:Q", format=".3g")])
    if scheme.kind == RELATIVE:
        return alt.Chart(frame, title=f"{model} · relative position bias per distance bucket and head", width=520,
                         height=max(14 * frame["head"].nunique(), 60), autosize=AUTOSIZE).mark_rect().encode(
            x=alt.X("bucket:O", title="distance bucket"), y=alt.Y("head:N", title=None, sort=None),
            color=alt.Color("bias:Q", scale=alt.Scale(scheme="redblue", domainMid=0, reverse=True)),
            tooltip=["bucket", "head", alt.Tooltip("bias:Q", format=".3f")])
    what = "learned position table" if scheme.kind == LEARNED else "sinusoidal position table"
    return alt.Chart(frame, title=f"{model} · {what} (first {frame['position'].max() + 1} positions × "
                                  f"{frame['dimension'].max() + 1} dimensions)", width=520, height=260,
                     autosize=AUTOSIZE).mark_rect().encode(
        x=alt.X("dimension:O", title="dimension", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("position:O", title="position", axis=alt.Axis(labels=False, ticks=False)),
        color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domainMid=0, reverse=True)),
        tooltip=["position", "dimension", alt.Tooltip("value:Q", format=".3f")])
