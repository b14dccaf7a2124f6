"""The logit lens drawn: the layers x steps grid of the chosen token's rank (`analysis.LensGrid`), and one step's
layers as a frame a table shows. Pure functions: grid -> tidy frame -> Altair."""
from __future__ import annotations

import math
from typing import Any, Mapping

import altair as alt
import pandas as pd

from ..analysis import LensGrid, StepLens, layer_label
from .style import AUTOSIZE, visible_token

LENS_CELL = "lens_cell"  # the selection's name: a click gives {"layer": ..., "step": ...}
MAX_GRID_STEPS = 120  # columns drawn at once; a longer decode shows a window around the current step


def grid_window(n_steps: int, current: int, width: int = MAX_GRID_STEPS) -> tuple[int, int]:
    """The steps [first, last) the grid draws: all when they fit, else `width` of them around `current` (0-based)."""
    if n_steps <= width:
        return 0, n_steps
    first = min(max(current - width // 2, 0), n_steps - width)
    return first, first + width


def lens_grid_frame(grid: LensGrid, first: int = 0, last: int | None = None) -> pd.DataFrame:
    """One row per (layer, step) of the window: layer, label, step (1-based), token, rank, prob, top, shade."""
    frame = grid.to_frame()
    last = len(grid.tokens) if last is None else last
    frame = frame[(frame["step"] > first) & (frame["step"] <= last)].copy()
    frame["token"] = frame["token"].map(visible_token)
    frame["top"] = frame["top"].map(visible_token)
    frame["shade"] = frame["rank"].map(lambda r: math.log10(max(int(r), 1)))  # 0 at rank 1
    frame["column"] = frame["step"].astype(str) + " " + frame["token"]
    return frame


def lens_grid_chart(grid: LensGrid, *, current: int | None = None, first: int = 0, last: int | None = None,
                    max_width: int = 1200) -> alt.LayerChart:
    """Layers (rows, the last on top) x steps (columns, "step token"): each cell the rank of the token the decode
    chose, as that layer's lens ranks it (dark: rank 1); a click selects the cell (`LENS_CELL`)."""
    frame = lens_grid_frame(grid, first, last)
    columns = list(dict.fromkeys(frame["column"]))
    rows = [layer_label(i) for i in reversed(range(len(grid.ranks)))]
    cell = max(8, min(26, (max_width - 160) // max(len(columns), 1)))
    height = max(8, min(22, 520 // max(len(rows), 1)))
    worst = max(1.0, float(frame["shade"].max()))
    pick = alt.selection_point(name=LENS_CELL, fields=["layer", "step"], on="click", toggle=False)
    base = alt.Chart(frame).encode(
        x=alt.X("column:N", sort=columns, title="step and the token chosen there",
                axis=alt.Axis(labelAngle=-60, labelLimit=90, labelOverlap=cell < 12)),
        y=alt.Y("label:N", sort=rows, title=None))
    cells = base.mark_rect(stroke="white", strokeWidth=0.5).encode(
        color=alt.Color("shade:Q", scale=alt.Scale(scheme="blues", reverse=True, domain=[0, worst]),
                        legend=alt.Legend(title="rank (log10)", orient="right")),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.85)),
        tooltip=[alt.Tooltip("label:N", title="layer"), alt.Tooltip("step:Q", title="step"),
                 alt.Tooltip("token:N", title="chosen token"), alt.Tooltip("rank:Q", title="its rank here"),
                 alt.Tooltip("prob:Q", title="its probability here", format=".3f"),
                 alt.Tooltip("top:N", title="this layer's top token")]).add_params(pick)
    layers = [cells]
    if current is not None and first <= current < (last if last is not None else len(grid.tokens)):
        now = frame[frame["step"] == current + 1]
        layers.append(alt.Chart(now).mark_rect(fill=None, stroke="#d62728", strokeWidth=1.5)
                      .encode(x=alt.X("column:N", sort=columns), y=alt.Y("label:N", sort=rows)))
    return alt.layer(*layers).properties(width=cell * len(columns), height=height * len(rows), autosize=AUTOSIZE)


def clicked_lens_cell(event: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """(layer, step) clicked in `lens_grid_chart` from Streamlit's selection state (layer 0: the embeddings; step
    1-based), or None."""
    points = ((event or {}).get("selection") or {}).get(LENS_CELL) or []
    if not points or not isinstance(points, list) or not isinstance(points[0], Mapping):
        return None
    layer, step = points[0].get("layer"), points[0].get("step")
    if layer is None or step is None:
        return None
    return int(layer), int(step)


def step_lens_frame(lens: StepLens, k: int = 3) -> pd.DataFrame:
    """One row per layer, the last on top: its top-k tokens with probabilities, the chosen token's rank and
    probability, entropy and KL(final || layer) in nats."""
    rows = []
    for p in reversed(lens.layers):
        rows.append({"layer": layer_label(p.layer),
                     "top tokens": "  ".join(f"{visible_token(t)} {v:.2f}" for t, v in p.top_k[:k]),
                     f"rank of {visible_token(lens.token)}": p.rank, "its probability": p.prob,
                     "entropy (nats)": p.entropy, "KL(final ‖ layer) (nats)": p.kl})
    return pd.DataFrame(rows)
