"""The layer x head table chart of a score (one number per layer and head).

Heads are 0-based integers and head -1 (`MEAN_HEAD`) is the mean over heads, in frames and in chart data alike.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..decode import MEAN_HEAD, head_label
from .style import AUTOSIZE, BLUES, DIVERGING, PLAIN_AXIS


def alignment_table_chart(scores: pd.DataFrame, signed: bool = False) -> alt.LayerChart:
    """Layer x head heatmap of scores (columns layer, head, score; head -1 = mean) with the values printed.

    `signed`: scores whose sign matters (a correlation, a loss change): a diverging scale, red below 0, white at 0 and
    blue above, over [-1, 1] when every score is in it, else over [-m, m] for the largest magnitude m, so that a
    negative score does not look like "nothing".
    """
    missing = {"layer", "head", "score"} - set(scores.columns)
    if missing:
        raise ValueError(f"scores needs columns layer, head and score; missing {', '.join(sorted(missing))}")
    for column in ("layer", "head"):
        if not pd.api.types.is_integer_dtype(scores[column]):
            raise ValueError(f"scores' {column} column must hold integers (head -1 is the mean of heads), "
                             f"not {scores[column].dtype}")
    frame = scores[["layer", "head", "score"]].astype({"layer": int, "head": int, "score": float})
    frame["head_label"] = [head_label(h) for h in frame["head"]]
    frame["layer_label"] = [f"L{x + 1}" for x in frame["layer"]]
    frame["score_text"] = frame["score"].map("{:.2f}".format)
    head_ids = sorted(set(frame["head"]) - {MEAN_HEAD}) + ([MEAN_HEAD] if MEAN_HEAD in set(frame["head"]) else [])
    heads = [head_label(h) for h in head_ids]
    layers = [f"L{i + 1}" for i in sorted(set(frame["layer"]))]
    dark = 0.6  # cells this dark get white text
    if signed:
        bound = max(1.0, float(frame["score"].abs().max()))
        scale = alt.Scale(range=list(DIVERGING), domain=[-bound, bound], domainMid=0.0)
        dark_test = f"abs(datum.score) > {dark * bound}"
    elif frame["score"].between(0, 1).all():
        scale, dark_test = alt.Scale(range=list(BLUES), domain=[0.0, 1.0]), f"datum.score > {dark}"
    else:  # scores outside 0-1 (a custom metric) get a fitted scale
        scale, dark_test = alt.Scale(range=list(BLUES)), f"datum.score > {dark}"
    base = alt.Chart(frame).encode(x=alt.X("head_label:N", sort=heads, title="head",
                                           axis=alt.Axis(labelAngle=0, orient="top", **PLAIN_AXIS)),
                                   y=alt.Y("layer_label:N", sort=layers, title="layer",
                                           axis=alt.Axis(labelAngle=0, **PLAIN_AXIS)))
    cells = base.mark_rect(stroke="white", strokeWidth=1.5).encode(
        color=alt.Color("score:Q", scale=scale, title="score",
                        # under the cells, not beside them: beside a map the chart has a side column's width
                        legend=alt.Legend(orient="bottom", direction="horizontal",
                                          gradientLength=max(80, min(160, 40 * len(heads))))),
        tooltip=[alt.Tooltip("layer_label:N", title="layer"), alt.Tooltip("head_label:N", title="head"),
                 alt.Tooltip("score:Q", format=".3f")])
    text = base.mark_text(fontSize=12).encode(
        text=alt.Text("score_text:N"),
        color=alt.ColorValue("#222", condition={"test": dark_test, "value": "white"}))
    return alt.layer(cells, text).properties(width=40 * len(heads), height=34 * len(layers), autosize=AUTOSIZE,
                                             view=alt.ViewBackground(stroke=None))
