"""Charts of one decoding step: token strips shaded by attention and the top-k candidate bars (Altair)."""
from __future__ import annotations

from typing import Sequence

import altair as alt
import pandas as pd

from .style import AUTOSIZE, BAR_COLOR, BLUES, CHOSEN_COLOR, PLAIN_AXIS, text_width, visible_token

STRIP_FONT_SIZE = 13
_CELL_PADDING, _MIN_CELL, _GAP = 16, 28, 4  # pixels: text to cell edge (both sides), narrowest cell, between cells
_ROW_HEIGHT, _ROW_GAP = 30, 6


def _strip_layout(labels: Sequence[str], max_width: int) -> pd.DataFrame:
    """Pixel boxes (x0, x1, y0, y1) of token cells sized to their text, wrapped onto rows at most max_width wide."""
    boxes, x, row = [], 0.0, 0
    for label in labels:
        width = min(max(_MIN_CELL, text_width(label, STRIP_FONT_SIZE) + _CELL_PADDING), max_width)
        if x > 0 and x + width > max_width:
            x, row = 0.0, row + 1
        y0 = row * (_ROW_HEIGHT + _ROW_GAP)
        boxes.append((x, x + width, y0, y0 + _ROW_HEIGHT))
        x += width + _GAP
    return pd.DataFrame(boxes, columns=["x0", "x1", "y0", "y1"])


def _strip(tokens: Sequence[str], weights: Sequence[float], title: str, what: str,
           max_width: int, layout_tokens: Sequence[str] | None = None) -> alt.LayerChart:
    """Tokens in reading order, each cell as wide as its text and shaded by its weight (0-1), rows wrapped.

    `layout_tokens` (starting with `tokens`) fixes the chart's size to what those tokens would take, so a strip
    that grows step by step keeps its size (and its spec: the browser then only swaps the data).
    """
    if len(tokens) != len(weights):
        raise ValueError(f"{len(tokens)} tokens but {len(weights)} weights")
    if max_width < _MIN_CELL:
        raise ValueError(f"max_width must be at least {_MIN_CELL} pixels, got {max_width}")
    layout_tokens = tokens if layout_tokens is None else layout_tokens
    if list(layout_tokens[: len(tokens)]) != list(tokens):
        raise ValueError("layout_tokens must start with the tokens shown")
    labels = [visible_token(t) for t in tokens]
    layout = _strip_layout([visible_token(t) for t in layout_tokens], max_width)
    frame = pd.DataFrame({"position": range(len(labels)), "token": labels,
                          "weight": [float(w) for w in weights]})
    frame["weight_text"] = frame["weight"].map("{:.3f}".format)
    frame = pd.concat([frame, layout.iloc[: len(labels)]], axis=1)
    frame["x_mid"], frame["y_mid"] = (frame["x0"] + frame["x1"]) / 2, (frame["y0"] + frame["y1"]) / 2
    tooltip = [alt.Tooltip("token:N", title=what), alt.Tooltip("weight_text:N", title="weight"),
               alt.Tooltip("position:Q", title="position")]
    pixels = dict(scale=None, axis=None)  # the data are pixel positions: an identity scale
    cells = alt.Chart(frame).mark_rect(stroke="#cfcfcf", strokeWidth=0.75, cornerRadius=3).encode(
        x=alt.X("x0:Q", **pixels), x2=alt.X2("x1:Q"), y=alt.Y("y0:Q", **pixels), y2=alt.Y2("y1:Q"),
        color=alt.Color("weight:Q", scale=alt.Scale(range=list(BLUES), domain=[0.0, 1.0]), legend=None),
        tooltip=tooltip)
    text = alt.Chart(frame).mark_text(fontSize=STRIP_FONT_SIZE, limit=max_width - _CELL_PADDING).encode(
        x=alt.X("x_mid:Q", **pixels), y=alt.Y("y_mid:Q", **pixels), text=alt.Text("token:N"), tooltip=tooltip,
        color=alt.ColorValue("#222", condition={"test": "datum.weight > 0.55", "value": "white"}))
    width = float(layout["x1"].max()) if len(layout) else _MIN_CELL
    height = float(layout["y1"].max()) if len(layout) else _ROW_HEIGHT
    chart = alt.layer(cells, text).properties(width=width, height=height, autosize=AUTOSIZE,
                                              view=alt.ViewBackground(stroke=None))
    return chart.properties(title=alt.TitleParams(title, anchor="start", fontSize=13, limit=max_width)) if title \
        else chart


def source_strip(tokens: Sequence[str], weights: Sequence[float], *, title: str = "",
                 max_width: int = 900) -> alt.LayerChart:
    """Source tokens shaded by the attention one decoding step pays them (0-1), wrapped to max_width pixels."""
    return _strip(tokens, weights, title, "source token", max_width)


def decoder_row_chart(tokens: Sequence[str], weights: Sequence[float], *, title: str = "",
                      max_width: int = 600, all_tokens: Sequence[str] | None = None) -> alt.LayerChart:
    """The decoder self-attention row of one step over the prefix so far (same style as `source_strip`).

    With `all_tokens` (every decoder input of the output, starting with the prefix) the chart is sized for the
    whole output, so it does not grow or jump while stepping through.
    """
    return _strip(tokens, weights, title, "decoder input", max_width, all_tokens)


def _unique(labels: Sequence[str]) -> list[str]:
    """Labels made distinct ("a", "a (2)"): two candidates may look alike once made visible."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def topk_frame(top_k: Sequence[tuple[str, float]], chosen: str | None = None) -> pd.DataFrame:
    """One row per candidate, most likely first: its visible token, probability in % and whether it was chosen."""
    percent = [100.0 * float(p) for _, p in top_k]
    return pd.DataFrame({"rank": range(1, len(top_k) + 1),
                         "token": _unique([visible_token(t) for t, _ in top_k]),
                         "percent": percent, "percent_text": [f"{p:.1f}%" for p in percent],
                         "chosen": [t == chosen for t, _ in top_k]})


def topk_bars(top_k: Sequence[tuple[str, float]], chosen: str | None = None, *, width: int = 300) -> alt.LayerChart:
    """Horizontal bars of the top-k next-token probabilities (in %), most likely on top, the chosen one highlighted.

    The spec does not depend on the candidates (they are data), so stepping through only swaps the chart's data.
    A Vega-Lite chart, not Plotly: the Decode page then loads no Plotly code (~1.2 s of a link's browser time).
    """
    frame = topk_frame(top_k, chosen)
    y = alt.Y("token:N", sort=alt.SortField("rank"), title=None,
              axis=alt.Axis(labelFontSize=14, labelLimit=160, **PLAIN_AXIS))
    x = alt.X("percent:Q", scale=alt.Scale(domain=[0, 118]), title=None,
              axis=alt.Axis(values=[0, 25, 50, 75, 100], labelExpr="datum.value + '%'", grid=True,
                            gridColor="#eee", **PLAIN_AXIS))
    tooltip = [alt.Tooltip("token:N", title="token"), alt.Tooltip("percent_text:N", title="probability")]
    bars = alt.Chart(frame).mark_bar(height={"band": 0.75}).encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.ColorValue(BAR_COLOR, condition={"test": "datum.chosen", "value": CHOSEN_COLOR}))
    text = alt.Chart(frame).mark_text(align="left", dx=3, fontSize=12, color="#333").encode(
        x=x, y=y, text=alt.Text("percent_text:N"))
    return alt.layer(bars, text).properties(width=width, height=30 * max(len(frame), 1), autosize=AUTOSIZE,
                                            view=alt.ViewBackground(stroke=None))
