"""Composition heatmaps: for each composition type (Q, K, V; Elhage et al. 2021), how strongly each later head reads
each earlier head's output, as `analysis.composition_scores` gives it (no Streamlit). Rows are the reading heads,
columns the writing heads, both in the model's order; pairs that do not read each other that way are left blank. Every
head's label is shown (the writers' vertical, each font within its cell), unless the cells are too small to read one
(hundreds of heads), which the axis title then says. A click selects the pair (`COMPOSITION_PAIR`: its `from` and `to`
labels)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt
import pandas as pd

from .style import AUTOSIZE

COMPOSITION_PAIR = "composition_pair"
TITLES = {"q": "Q-composition", "k": "K-composition", "v": "V-composition"}
MAX_MAP_PX = 1100
MAX_CELL_PX = 28.0
MIN_LABEL_PX = 7.0  # a cell narrower than this cannot carry a readable label: only then are labels thinned


def _axis(cell: float, angle: int) -> alt.Axis:
    """Every head's label, each in its own cell (vertical on the x axis, so a label takes a cell's width only), its
    font no taller than the cell; on a map whose cells are too small to read, the labels Vega-Lite can fit."""
    return alt.Axis(labelAngle=angle, labelOverlap=cell < MIN_LABEL_PX, labelLimit=90, labelPadding=2,
                    labelFontSize=float(max(6.0, min(11.0, cell - 1))))


def _title(side: str, n: int, cell: float) -> str:
    return side + ("" if cell >= MIN_LABEL_PX else f" · {n} heads, not every label fits")


def composition_heatmap(frame: pd.DataFrame, mode: str, *, title: str = "", max_width: int = MAX_MAP_PX) -> alt.Chart:
    """One composition type's map (`mode` "q", "k" or "v") of a `composition_scores` frame (scores in 0..1), never
    wider than `max_width` pixels; its colours run from 0 to the map's largest score (scores of 0.07-0.09 on a fixed
    0-1 scale were one pale wash), as its legend's numbers say."""
    if mode not in TITLES:
        raise ValueError(f"composition type {mode!r}: one of q, k, v")
    data = frame.dropna(subset=[mode])[["from", "to", mode]].rename(columns={mode: "score"})
    writers, readers = list(dict.fromkeys(frame["from"])), list(dict.fromkeys(frame["to"]))
    cell = float(max(1.0, min(MAX_CELL_PX, max_width / max(len(writers), 1))))
    height = float(max(1.0, min(MAX_CELL_PX, 700 / max(len(readers), 1))))
    largest = float(data["score"].max()) if len(data) else 0.0
    top = largest if largest > 0 else 1.0
    pick = alt.selection_point(name=COMPOSITION_PAIR, fields=["from", "to"], on="click", toggle=False)
    return alt.Chart(data).mark_rect().encode(
        x=alt.X("from:N", sort=writers, title=_title("earlier head (writes)", len(writers), cell),
                axis=_axis(cell, -90)),
        y=alt.Y("to:N", sort=readers, title=_title("later head (reads)", len(readers), height),
                axis=_axis(height, 0)),
        color=alt.Color("score:Q", title=TITLES[mode], scale=alt.Scale(scheme="blues", domain=[0, top])),
        tooltip=[alt.Tooltip("from:N", title="from"), alt.Tooltip("to:N", title="to"),
                 alt.Tooltip("score:Q", title=TITLES[mode], format=".3f")],
    ).add_params(pick).properties(width=cell * len(writers), height=height * len(readers), autosize=AUTOSIZE,
                                  title=alt.TitleParams(title or TITLES[mode], anchor="start", fontSize=14))


def q_composition_heatmap(frame: pd.DataFrame, **kwargs: Any) -> alt.Chart:
    """The Q-composition map: a later head's queries reading an earlier head's output."""
    return composition_heatmap(frame, "q", **kwargs)


def k_composition_heatmap(frame: pd.DataFrame, **kwargs: Any) -> alt.Chart:
    """The K-composition map: a later head's keys reading an earlier head's output (encoder -> cross included)."""
    return composition_heatmap(frame, "k", **kwargs)


def v_composition_heatmap(frame: pd.DataFrame, **kwargs: Any) -> alt.Chart:
    """The V-composition map: a later head's values reading an earlier head's output."""
    return composition_heatmap(frame, "v", **kwargs)


def clicked_composition_pair(event: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(from, to) of the clicked cell of a composition heatmap from Streamlit's selection state, or None."""
    points = ((event or {}).get("selection") or {}).get(COMPOSITION_PAIR) or []
    if not points or not isinstance(points, list) or not isinstance(points[0], Mapping):
        return None
    a, b = points[0].get("from"), points[0].get("to")
    return (a, b) if isinstance(a, str) and isinstance(b, str) else None
