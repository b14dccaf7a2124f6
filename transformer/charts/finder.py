"""The head finder: every head of every kind as a point, its axes and colour picked from the finder's columns
(`head_finder_frame`), a click selecting a head (the point selection `FINDER_SELECTION` over its label)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..analysis import FINDER_COLUMNS, NOMINAL
from .style import AUTOSIZE, counted

FINDER_SELECTION = "finder_head"


def _title(column: str) -> str:
    return column if column in NOMINAL else f"{column}: {FINDER_COLUMNS[column]}"


def finder_points(frame: pd.DataFrame, x: str, y: str, color: str) -> pd.DataFrame:
    """The points drawn: the heads with both an x and a y value (the others cannot be placed)."""
    for name in (x, y, color):
        if name not in FINDER_COLUMNS and name not in NOMINAL:
            raise ValueError(f"unknown column {name!r}; expected one of {', '.join([*FINDER_COLUMNS, *NOMINAL])}")
    columns = list(dict.fromkeys(["label", "kind", "layer", "head", x, y, color]))
    return frame[columns].dropna(subset=[x, y]).reset_index(drop=True)


def head_finder_chart(frame: pd.DataFrame, x: str = "entropy", y: str = "max_weight", color: str = "kind", *,
                      width: int = 560, height: int = 380) -> alt.Chart:
    """A scatter of the heads (x, y), coloured by `color`; a click selects a head (its `label`)."""
    data = finder_points(frame, x, y, color)
    hidden = len(frame) - len(data)
    pick = alt.selection_point(name=FINDER_SELECTION, fields=["label"], on="click", empty=False)
    colour = (alt.Color(f"{color}:N", title=color) if color in NOMINAL or data[color].dtype == object
              else alt.Color(f"{color}:Q", title=color, scale=alt.Scale(scheme="viridis")))
    title = counted(len(data), "head") + (f" ({hidden} without {x} or {y} not drawn)" if hidden else "")
    return (alt.Chart(data, title=title, width=width, height=height, autosize=AUTOSIZE)
            .mark_circle(size=70, opacity=0.8, stroke="black")
            .encode(x=alt.X(f"{x}:Q", title=_title(x)), y=alt.Y(f"{y}:Q", title=_title(y)), color=colour,
                    strokeWidth=alt.condition(pick, alt.value(2), alt.value(0)),
                    tooltip=[alt.Tooltip("label:N", title="head"),
                             *[alt.Tooltip(f"{c}:{'N' if c in NOMINAL else 'Q'}", format="" if c in NOMINAL
                                           else ".3f") for c in dict.fromkeys([x, y, color])]])
            .add_params(pick))
