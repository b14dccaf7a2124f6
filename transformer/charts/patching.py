"""A patching map: how much of the clean answer each patched activation brings back (no Streamlit).

One heatmap per site and stack or kind (`analysis.patch_sites`' frame): heads as layers x heads, the residual stream
as layers x positions, the encoder output as one row of source positions. Blue: the patch brings the clean answer
back (recovery 1); white: nothing changes; red: it moves further away. A click selects the cell (`PATCH_CELL`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from .difference import DIVERGING
from .style import AUTOSIZE, visible_token

PATCH_CELL = "patch_cell"  # the selection's name: a click gives the cell's site, where, layer, head and position
CELL_FIELDS = ["site", "where", "layer", "head", "position"]
MAX_MAP_PX = 1100


def _labels(frame: pd.DataFrame, site: str) -> pd.DataFrame:
    out = frame.copy()
    if site == "head":
        out["column"] = (out["head"] + 1).map(lambda h: f"H{h}")
        out["row"] = (out["layer"] + 1).map(lambda i: f"L{i}")
    elif site == "head per position":
        out["column"] = [f"{p} {visible_token(t)}" for p, t in zip(out["position"], out["token"], strict=True)]
        out["row"] = [f"L{i + 1} H{h + 1}" for i, h in zip(out["layer"], out["head"], strict=True)]
    else:
        out["column"] = [f"{p} {visible_token(t)}" for p, t in zip(out["position"], out["token"], strict=True)]
        out["row"] = ["output" if site == "encoder output" else ("embeddings" if i == 0 else f"after L{i}")
                      for i in out["layer"]]
    return out


def _fits_flat(labels: Sequence[str], cell: float) -> bool:
    """Whether every label, set flat, fits its cell (about 7 px a character at the axis' 11 px)."""
    return max((len(label) for label in labels), default=0) * 7 <= cell


def patching_heatmap(frame: pd.DataFrame, value: str = "recovery", *, title: str = "",
                     max_width: int = MAX_MAP_PX) -> alt.Chart:
    """The cells of one site and one stack or kind (`frame` holds only those rows), coloured by `value`: "recovery"
    on a fixed −1..1 scale, or "difference" / "estimate" (nats) on a scale symmetric about 0."""
    site = str(frame["site"].iloc[0])
    data = _labels(frame, site)
    data["shown"] = data[value].map(lambda v: "–" if pd.isna(v) else f"{v:+.3f}")
    columns, rows = list(dict.fromkeys(data["column"])), list(dict.fromkeys(data["row"]))
    cell = float(min(40.0, max_width / max(len(columns), 1)))  # never wider than max_width
    height = float(max(8.0, min(28.0, 520 / max(len(rows), 1))))
    if value == "recovery":
        domain = [-1.0, 1.0]
    else:
        peak = float(np.nanmax(np.abs(data[value].to_numpy(dtype=float)))) if data[value].notna().any() else 0.0
        domain = [-max(peak, 1e-6), max(peak, 1e-6)]
    pick = alt.selection_point(name=PATCH_CELL, fields=CELL_FIELDS, on="click", toggle=False)
    what = {"recovery": "recovery", "difference": "metric − corrupted (nats)", "estimate": "estimated difference"}
    return alt.Chart(data).mark_rect(stroke="white", strokeWidth=0.5 if cell >= 14 else 0).encode(
        x=alt.X("column:N", sort=columns, title="head" if site == "head" else "position (clean input)",
                axis=alt.Axis(labelAngle=0 if site == "head" or _fits_flat(columns, cell) else -60, labelLimit=90,
                              labelOverlap=cell < 12)),
        y=alt.Y("row:N", sort=rows, title={"encoder output": None, "head per position": "head"}.get(site, "layer")),
        color=alt.Color(f"{value}:Q", title=what.get(value, value),
                        scale=alt.Scale(range=list(DIVERGING), domain=domain, clamp=True),
                        legend=alt.Legend(format=".1f")),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.9)),
        tooltip=[alt.Tooltip("row:N", title="layer"), alt.Tooltip("column:N", title="head" if site == "head"
                                                                   else "position"),
                 alt.Tooltip("token:N", title="clean token"), alt.Tooltip("shown:N", title=what.get(value, value))],
    ).add_params(pick).properties(width=cell * len(columns), height=height * len(rows), autosize=AUTOSIZE,
                                  title=alt.TitleParams(title, anchor="start", fontSize=14))


def clicked_patch_cell(event: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The clicked cell of a `patching_heatmap` from Streamlit's selection state ({site, where, layer, head,
    position}), or None."""
    points = ((event or {}).get("selection") or {}).get(PATCH_CELL) or []
    if not points or not isinstance(points, list) or not isinstance(points[0], Mapping):
        return None
    cell: dict[str, Any] = {name: points[0].get(name) for name in CELL_FIELDS}
    if any(v is None for v in cell.values()):
        return None
    return {**cell, **{k: int(cell[k]) for k in ("layer", "head", "position")}}
