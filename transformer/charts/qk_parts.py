"""What made this score, drawn: a map whose cells can be clicked to ask it (QK_CELL), and one head's score at a
(query, key) cell as a map of query part groups x key part groups (`transformer.analysis.why.qk_attribution`'s table
summed per sublayer's heads), coloured by their share."""
from __future__ import annotations

from typing import Any, Mapping

import altair as alt
import pandas as pd

from ..analysis import QKTable

QK_CELL = "qk_cell"  # the point selection a clickable map carries: the clicked (query, key)
MAX_CELL = 30
AUTOSIZE = {"type": "pad", "contains": "padding"}  # the chart grows by its labels and legend


def with_cell_clicks(spec: dict[str, Any]) -> dict[str, Any]:
    """A map's Vega-Lite spec whose cells can be clicked: its heatmap layer (the first) carries the point selection
    QK_CELL over query_index and key_index. The spec given is left as it was (it may be cached)."""
    first = spec["layer"][0]
    pick = {"name": QK_CELL, "select": {"type": "point", "fields": ["query_index", "key_index"], "on": "click",
                                        "toggle": False}}
    return {**spec, "layer": [{**first, "params": [*first.get("params", []), pick]}, *spec["layer"][1:]]}


def clicked_cell(event: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """(query, key) of the clicked cell of a `with_cell_clicks` map from Streamlit's selection state, or None."""
    points = ((event or {}).get("selection") or {}).get(QK_CELL) or []
    if not points or not isinstance(points[0], Mapping):
        return None
    q, k = points[0].get("query_index"), points[0].get("key_index")
    return (int(q), int(k)) if isinstance(q, (int, float)) and isinstance(k, (int, float)) else None


def part_group(name: str) -> str:
    """The row or column of the part map: one head's part joins its sublayer's ('cross:L1H2' -> 'cross:L1 heads')."""
    stack, _, point = name.partition(":")
    if point.startswith("L") and "H" in point and ".mlp" not in point:
        return f"{stack}:{point.split('H')[0]} heads"
    return name


def grouped_parts(table: QKTable) -> pd.DataFrame:
    """The contributions summed per (query group, key group), in the model's order on each axis."""
    frame = pd.DataFrame(table.contributions.numpy(), index=list(table.query_parts), columns=list(table.key_parts))
    frame = frame.T.groupby(part_group, sort=False).sum().T.groupby(part_group, sort=False).sum()
    return frame.stack().rename("contribution").rename_axis(["query part", "key part"]).reset_index()


def qk_part_map(table: QKTable, width: int) -> alt.Chart:
    """Query part groups (rows) x key part groups (columns), coloured by their share of the score; cells sized to
    fit `width` pixels with the labels."""
    data = grouped_parts(table)
    rows, cols = list(dict.fromkeys(data["query part"])), list(dict.fromkeys(data["key part"]))
    cell = float(max(12, min(MAX_CELL, (width - 160) / max(len(cols), 1))))
    top = float(data["contribution"].abs().max() or 1.0)
    return alt.Chart(data).mark_rect().encode(
        x=alt.X("key part:N", sort=cols, title="key part",
                axis=alt.Axis(labelAngle=-90, labelLimit=110, labelOverlap=False)),
        y=alt.Y("query part:N", sort=rows, title="query part", axis=alt.Axis(labelLimit=110, labelOverlap=False)),
        color=alt.Color("contribution:Q", scale=alt.Scale(scheme="redblue", domain=[-top, top], reverse=True),
                        title="contribution"),
        tooltip=["query part:N", "key part:N", alt.Tooltip("contribution:Q", format="+.4f")],
    ).properties(width=cell * len(cols), height=cell * len(rows), autosize=AUTOSIZE,
                 title=alt.TitleParams("Score by query part × key part", anchor="start"))
