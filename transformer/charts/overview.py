"""The head overview map: layers x heads of one kind, one small cell per head, coloured by a chosen statistic.

Clicking a cell selects that head through a point selection named "cell" over the fields layer and head, the
same as `attention_grid`'s, so `selected_panel` reads both charts' clicks.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..analysis import SIGNED_STATISTICS, STATISTICS
from ..decode import ALL_TITLES as KIND_TITLES  # every family's kinds
from .style import AUTOSIZE, BLUES, DIVERGING, PLAIN_AXIS, counted

OVERVIEW_SIZE = 360  # pixels the longer side of the map aims for
MIN_CELL, MAX_CELL = 14, 28


def overview_cell(n_layers: int, n_heads: int, size: int = OVERVIEW_SIZE) -> float:
    """Cell side in pixels: `size` over the longer side, kept between 14 and 28 (24 layers -> 15 px)."""
    return float(min(MAX_CELL, max(MIN_CELL, size / max(n_layers, n_heads, 1))))


def head_overview(frame: pd.DataFrame, statistic: str, kind: str, *, size: int = OVERVIEW_SIZE,
                  title: str | None = None, share: bool = False) -> alt.Chart:
    """Layers (rows) x heads (columns) of `kind` from `head_overview_frame`, coloured by `statistic`; a click on a
    cell selects that head (read it with `selected_panel`); heads without a value are drawn grey. A column of the
    frame outside STATISTICS (a corpus statistic) needs its `title`; `share`: its values lie in [0, 1]."""
    if statistic not in STATISTICS and (title is None or statistic not in frame.columns):
        raise ValueError(f"unknown statistic {statistic!r}; expected one of {', '.join(STATISTICS)}")
    title = title or STATISTICS[statistic]
    data = frame[frame["kind"] == kind].copy()
    if data.empty:
        raise ValueError(f"the frame has no {kind} heads")
    n_layers, n_heads = int(data["layer"].max()) + 1, int(data["head"].max()) + 1
    cell = overview_cell(n_layers, n_heads, size)
    data["value"] = data[statistic].astype(float)
    data["value_text"] = data["value"].map(lambda v: "—" if pd.isna(v) else f"{v:.3f}")
    data["layer_label"] = [f"L{x + 1}" for x in data["layer"]]
    data["head_label"] = [f"H{h + 1}" for h in data["head"]]
    values = data["value"].dropna()
    if statistic in SIGNED_STATISTICS:
        bound = float(values.abs().max()) if not values.empty and values.abs().max() > 0 else 1.0
        scale = alt.Scale(range=list(DIVERGING), domain=[-bound, bound], domainMid=0.0)
    elif statistic in ("max_weight", "alignment") or share:
        scale = alt.Scale(range=list(BLUES), domain=[0.0, 1.0])
    else:
        scale = alt.Scale(range=list(BLUES), zero=False)
    selection = alt.selection_point(name="cell", fields=["layer", "head"], on="click", toggle=False,
                                    clear="dblclick")
    label_every = 1 if cell >= 18 else 2  # 24 layers at 15 px: every other label, so they do not overprint
    x = alt.X("head:O", scale=alt.Scale(domain=list(range(n_heads))), title="head",
              axis=alt.Axis(orient="top", labelAngle=0, labelExpr=f"datum.value % {label_every} == 0 ? "
                            "'H' + (datum.value + 1) : ''", labelFontSize=10, **PLAIN_AXIS))
    y = alt.Y("layer:O", scale=alt.Scale(domain=list(range(n_layers))), title="layer",
              axis=alt.Axis(labelExpr=f"datum.value % {label_every} == 0 ? 'L' + (datum.value + 1) : ''",
                            labelFontSize=10, **PLAIN_AXIS))
    tooltip = [alt.Tooltip("layer_label:N", title="layer"), alt.Tooltip("head_label:N", title="head"),
               alt.Tooltip("value_text:N", title=title)]
    tooltip += [alt.Tooltip(f"{s}:Q", title=STATISTICS[s], format=".3f") for s in STATISTICS
                if s != statistic and data[s].notna().any()]
    cells = alt.Chart(data).mark_rect(stroke="white", strokeWidth=1).encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("value:Q", scale=scale, title=title,
                        condition={"test": "!isValid(datum.value)", "value": "#d4d4d4"},
                        legend=alt.Legend(gradientLength=max(90, min(200, cell * n_layers)), format=".2f",
                                          labelOverlap="greedy")),
        opacity=alt.OpacityValue(0.45, condition={"param": selection.name, "value": 1.0}),
    ).add_params(selection)
    return cells.properties(
        width=cell * n_heads, height=cell * n_layers, autosize=AUTOSIZE, view=alt.ViewBackground(stroke=None),
        title=alt.TitleParams(f"{KIND_TITLES[kind]} · {counted(n_layers, 'layer')} × {counted(n_heads, 'head')} · "
                              f"{title}",
                              subtitle="click a head to open it, double-click to clear", anchor="start",
                              fontSize=13, subtitleColor="#555", subtitlePadding=4))  # (at 0 the boxes overlapped)
