"""The map's overview mode (a document's whole map, when its weights are too many to draw one by one) in token
positions: each cell of the streamed pass's pooled grid over the rows and keys it covers, an interval brush (named
`OVERVIEW_BRUSH`) to drag a region to zoom, and the region zoomed outlined.

A drag's selection holds its two ends on each axis in token positions (`{"key": [a, b], "row": [c, d]}`);
`brushed_region` turns it into the rows and keys to zoom (snapped to whole tokens, clipped to the input, at most a
side's maximum), through `window.drag_window`.

The colour scale is `log` (default: a head whose one cell is 1.0 and the rest ~0.001-0.01 still shows its structure;
weights below a floor, a power of ten named in the legend, drawn as the floor) or `linear` (0 to the map's max). The
data's weights are never changed: the log scale colours a column beside them (`drawn`), a copy clipped at the floor.
"""
from __future__ import annotations

from typing import Any, Mapping

import altair as alt
import numpy as np
import pandas as pd
from torch import Tensor

from ..style import AUTOSIZE, HIGHLIGHT_COLOR
from ..window import drag_window

OVERVIEW_BRUSH = "region"  # the interval selection's name: Streamlit's selection state holds it under this
Region = tuple[tuple[int, int], tuple[int, int]]  # ((first row, row after the last), (first key, key after the last))
OVERVIEW_SCALES = ("log", "linear")  # the overview's colour scales, the default first
FLOOR_PERCENTILE = 5  # the log scale's floor: the power of ten at or below this percentile of the positive weights
FLOOR_DECADES = 6  # at most this many powers of ten below the map's max


def log_floor(weights: np.ndarray | pd.Series) -> float:
    """The log colour scale's floor for these weights: the power of ten at or below the FLOOR_PERCENTILE-th
    percentile of the positive ones, at most FLOOR_DECADES below the largest and below it (1e-3 when none is
    positive)."""
    w = np.asarray(weights, dtype=float)
    positive = w[w > 0]
    if positive.size == 0:
        return 1e-3
    peak = float(positive.max())
    low = max(float(np.percentile(positive, FLOOR_PERCENTILE)), peak * 10.0 ** -FLOOR_DECADES)
    floor = 10.0 ** np.floor(np.log10(low))
    return float(floor if floor < peak else 10.0 ** (np.ceil(np.log10(peak)) - 1))


def scale_title(scale: str, floor: float) -> list[str]:
    """The colour legend's title (two lines): what each cell is and how its colour is drawn."""
    if scale == "linear":
        return ["max weight", "linear, 0 to the max"]
    return ["max weight", f"log; under {floor:.0e} as {floor:.0e}".replace("e-0", "e-")]


def overview_frame(grid: Tensor, n_rows: int, n_keys: int, resolution: int) -> pd.DataFrame:
    """One line per cell of the pooled grid (R, C) of an overview made at `resolution` (`summarise_layer`'s: cells
    of ceil(n / resolution) tokens, the last ones fewer): row, row_end, key, key_end (token positions, end
    exclusive) and weight."""
    rb, kb = -(-n_rows // resolution), -(-n_keys // resolution)
    if tuple(grid.shape) != (-(-n_rows // rb), -(-n_keys // kb)):
        raise ValueError(f"a grid of {tuple(grid.shape)} cells is not the overview of {n_rows} rows x {n_keys} keys "
                         f"at resolution {resolution}")
    rows, keys = grid.shape
    frame = pd.DataFrame({"row": [r * rb for r in range(rows) for _ in range(keys)],
                          "key": [k * kb for _ in range(rows) for k in range(keys)],
                          "weight": grid.reshape(-1).double().numpy()})
    frame["row_end"] = (frame["row"] + rb).clip(upper=n_rows)
    frame["key_end"] = (frame["key"] + kb).clip(upper=n_keys)
    return frame


def overview_chart(frame: pd.DataFrame, n_rows: int, n_keys: int, title: str, region: Region | None = None, *,
                   width: int = 600, height: int = 300, scale: str = "log") -> alt.LayerChart:
    """The overview (`overview_frame`) with rows down and keys across, axes titled and ticked in token positions, a
    brush named `OVERVIEW_BRUSH` over both axes to drag a region, `region` (the one zoomed) outlined, coloured on
    `scale` (one of OVERVIEW_SCALES; log: from `log_floor` to the max, said in the legend's title)."""
    if scale not in OVERVIEW_SCALES:
        raise ValueError(f"colour scale {scale!r} is not one of {', '.join(OVERVIEW_SCALES)}")
    x = alt.X("key:Q", title="key position", scale=alt.Scale(domain=[0, n_keys], nice=False, zero=False),
              axis=alt.Axis(format=",d", tickMinStep=1))
    y = alt.Y("row:Q", title="query position (row)",
              scale=alt.Scale(domain=[0, n_rows], nice=False, zero=False, reverse=True),
              axis=alt.Axis(format=",d", tickMinStep=1))
    brush = alt.selection_interval(name=OVERVIEW_BRUSH, encodings=["x", "y"], clear="dblclick")
    peak = float(frame["weight"].max()) if len(frame) else 1.0
    floor = log_floor(frame["weight"])
    data = frame
    if scale == "log":  # the colour reads a copy clipped at the floor (a log scale has no 0); `weight` stays exact
        data = frame.assign(drawn=frame["weight"].clip(lower=floor))  # in the data, not a transform: Streamlit
        # counts a chart's marks to pick Vega's canvas renderer (thousands of cells), and cannot through a transform
        color = alt.Color("drawn:Q", title=scale_title(scale, floor), legend=alt.Legend(format="~g"),
                          scale=alt.Scale(type="log", domain=[floor, max(peak, floor * 10)], scheme="blues"))
    else:
        color = alt.Color("weight:Q", title=scale_title(scale, floor),
                          scale=alt.Scale(type="linear", domain=[0, peak or 1.0], scheme="blues"))
    cells = alt.Chart(data).mark_rect().encode(
        x=x, x2="key_end:Q", y=y, y2="row_end:Q", color=color,
        tooltip=[alt.Tooltip("row:Q", title="rows from"), alt.Tooltip("key:Q", title="keys from"),
                 alt.Tooltip("weight:Q", format=".3g", title="max weight")]).add_params(brush)
    layers: list[alt.Chart] = [cells]
    if region is not None:
        (r0, r1), (k0, k1) = region
        box = pd.DataFrame({"row": [r0], "row_end": [r1], "key": [k0], "key_end": [k1]})
        layers.append(alt.Chart(box).mark_rect(fill=None, stroke=HIGHLIGHT_COLOR, strokeWidth=2).encode(
            x=x, x2="key_end:Q", y=y, y2="row_end:Q"))
    return alt.layer(*layers, title=title, width=width, height=height, autosize=AUTOSIZE)  # the plot at that size


def brushed_ends(state: Mapping[str, Any] | None) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The dragged region's ends ((row, row), (key, key)) in token positions from Streamlit's selection state of the
    overview, None when nothing is dragged (or the drag was cleared)."""
    selection = ((state or {}).get("selection") or {}).get(OVERVIEW_BRUSH) or {}
    rows, keys = selection.get("row"), selection.get("key")
    if not rows or not keys or len(rows) != 2 or len(keys) != 2:
        return None
    return (float(rows[0]), float(rows[1])), (float(keys[0]), float(keys[1]))


def brushed_region(ends: tuple[tuple[float, float], tuple[float, float]], n_rows: int, n_keys: int,
                   max_side: int) -> Region:
    """The rows and keys to zoom for a drag's ends (`brushed_ends`): snapped outward to whole tokens, clipped to the
    input, each side cut to `max_side` from its start. ValueError (one line) when the drag covers no token."""
    (r_low, r_high), (k_low, k_high) = ends
    return (drag_window(r_low, r_high, n_rows, max_side, "rows"), drag_window(k_low, k_high, n_keys, max_side, "keys"))
