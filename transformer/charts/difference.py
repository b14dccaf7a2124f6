"""The difference of two attention maps (B - A) as a diverging heatmap on the token axes they share (no Streamlit)."""
from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from ..analysis import AttentionDifference
from .attention.cells import _cell_size, _token_axis, axis_titles, with_token_labels
from .style import AUTOSIZE, visible_token

# ColorBrewer RdBu: red where A attends more, white for no difference, blue where B attends more.
DIVERGING = ("#b2182b", "#ef8a62", "#fddbc7", "#f7f7f7", "#d1e5f0", "#67a9cf", "#2166ac")


def difference_frame(diff: AttentionDifference) -> pd.DataFrame:
    """One row per cell: positions, tokens, A's and B's weights and B - A."""
    q, k = diff.difference.shape
    qi, ki = np.repeat(np.arange(q), k), np.tile(np.arange(k), q)
    frame = pd.DataFrame({
        "query_index": qi, "query_token": np.asarray([visible_token(t) for t in diff.query_tokens], dtype=object)[qi],
        "key_index": ki, "key_token": np.asarray([visible_token(t) for t in diff.key_tokens], dtype=object)[ki],
        "a": diff.a.ravel(), "b": diff.b.ravel(), "difference": diff.difference.ravel(),
    })
    frame["difference_text"] = frame["difference"].map("{:+.3f}".format)
    return frame


def difference_heatmap(diff: AttentionDifference, *, size: int = 420, title: str = "") -> alt.Chart:
    """B - A on a fixed -1..1 scale (weights lie in 0..1), queries down and keys across, with tooltips."""
    frame = difference_frame(diff)
    q, k = diff.difference.shape
    cell = _cell_size(q, k, size)
    return difference_chart(frame, diff.query_tokens, diff.key_tokens, diff.kind, cell, title)


def difference_chart(frame: pd.DataFrame, query_tokens: Sequence[str], key_tokens: Sequence[str], kind: str,
                     cell: float, title: str, extra_tooltips: Sequence[alt.Tooltip] = ()) -> alt.Chart:
    """A B − A frame (query_index, key_index, tokens, a, b, difference, difference_text) as the heatmap on a fixed
    −1..1 scale, queries down and keys across; `extra_tooltips` after the common ones."""
    q, k = len(query_tokens), len(key_tokens)
    y_title, x_title = axis_titles(kind)
    chart = alt.Chart(frame).mark_rect(stroke="white", strokeWidth=0.5 if cell >= 14 else 0).encode(
        x=alt.X("key_index:O", scale=alt.Scale(domain=list(range(k))),
                axis=_token_axis(key_tokens, cell, x_title, horizontal=True)),
        y=alt.Y("query_index:O", scale=alt.Scale(domain=list(range(q))),
                axis=_token_axis(query_tokens, cell, y_title, horizontal=False)),
        color=alt.Color("difference:Q", title="B − A", scale=alt.Scale(range=list(DIVERGING), domain=[-1.0, 1.0]),
                        legend=alt.Legend(gradientLength=min(160, max(80, cell * q)), format=".1f")),
        tooltip=[alt.Tooltip("query_token:N", title="query"), alt.Tooltip("key_token:N", title="key"),
                 alt.Tooltip("a:Q", title="A", format=".3f"), alt.Tooltip("b:Q", title="B", format=".3f"),
                 alt.Tooltip("difference_text:N", title="B − A"), *extra_tooltips],
    ).properties(width=cell * k, height=cell * q, view=alt.ViewBackground(stroke=None), autosize=AUTOSIZE,
                 title=alt.TitleParams(title, anchor="start", fontSize=14))
    return with_token_labels(chart, query_tokens, key_tokens)
