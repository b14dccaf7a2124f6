"""A poll's result: for each token the room's share of votes beside the model's own weight (or probability), as
grouped horizontal bars with their percentages printed, the model's top token marked."""
from __future__ import annotations

from typing import Sequence

import altair as alt
import pandas as pd

from .style import AUTOSIZE, BAR_COLOR, CHOSEN_COLOR, PLAIN_AXIS, visible_token

SERIES = ("the room's votes", "the model")


def poll_frame(options: Sequence[str], counts: Sequence[int], answer: Sequence[float]) -> pd.DataFrame:
    """One row per (option, series): the option's label, its share of the votes or its model weight, in percent."""
    if not len(options) == len(counts) == len(answer):
        raise ValueError(f"{len(options)} options, {len(counts)} counts and {len(answer)} answer values")
    total = max(sum(counts), 1)
    top = max(range(len(answer)), key=lambda i: (answer[i], -i)) if len(answer) else -1
    rows = []
    for i, (option, count, weight) in enumerate(zip(options, counts, answer, strict=True)):
        label = f"{i + 1} · {visible_token(option)}" + (" ★" if i == top else "")
        for series, share in zip(SERIES, (count / total, float(weight)), strict=True):
            rows.append({"rank": i, "option": label, "series": series, "percent": 100 * share,
                         "percent_text": f"{100 * share:.1f}%", "votes": count})
    return pd.DataFrame(rows)


def poll_chart(options: Sequence[str], counts: Sequence[int], answer: Sequence[float], *, title: str = "",
               width: int = 320) -> alt.LayerChart:
    """The room's votes (share of all votes) beside the model's weights over the same tokens; the model's top token
    is starred; `width`: the bars' (under 200 px the legend's two names stacked, for a side column). Raises
    ValueError when the three lengths differ."""
    frame = poll_frame(options, counts, answer)
    y = alt.Y("option:N", sort=list(dict.fromkeys(frame["option"])), title=None,  # the tokens in input order
              axis=alt.Axis(labelFontSize=14, labelLimit=180, **PLAIN_AXIS))
    x = alt.X("percent:Q", scale=alt.Scale(domain=[0, 125]), title=None,
              axis=alt.Axis(values=[0, 25, 50, 75, 100], labelExpr="datum.value + '%'", grid=True,
                            gridColor="#eee", **PLAIN_AXIS))
    colour = alt.Color("series:N", scale=alt.Scale(domain=list(SERIES), range=[CHOSEN_COLOR, BAR_COLOR]),
                       legend=alt.Legend(title=None, orient="top", labelFontSize=13,
                                         columns=2 if width >= 200 else 1))  # narrow: the two names stacked
    offset = alt.YOffset("series:N", sort=list(SERIES))
    tooltip = [alt.Tooltip("option:N", title="token"), alt.Tooltip("series:N", title="bar"),
               alt.Tooltip("percent_text:N", title="share"), alt.Tooltip("votes:Q", title="votes")]
    bars = alt.Chart(frame).mark_bar().encode(x=x, y=y, yOffset=offset, color=colour, tooltip=tooltip)
    text = alt.Chart(frame).mark_text(align="left", dx=3, fontSize=12, color="#333").encode(
        x=x, y=y, yOffset=offset, text=alt.Text("percent_text:N"))
    chart = alt.layer(bars, text).properties(width=width, height=alt.Step(16), autosize=AUTOSIZE,
                                             view=alt.ViewBackground(stroke=None))
    return chart.properties(title=alt.TitleParams(title, anchor="start", fontSize=14)) if title else chart
