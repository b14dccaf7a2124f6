"""Edit and compare drawn: B − A on aligned rows and columns, and how far each head's attention moved (no Streamlit).

An inserted token's row or column holds B's weights alone (+), a deleted one A's alone (−); the labels say so
("+big", "−big", "dog→cat" for a swap) and the tooltip names what each cell compares.
"""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from ..analysis import SAME, AlignedDifference
from .difference import difference_chart
from .style import AUTOSIZE, visible_token

MAX_MAP_PX = 1100  # a map never grows wider than this (cells shrink, labels go to the tooltip below 9 px)
EDIT_WINDOW = 96  # positions of one axis a B − A map draws at most; a longer axis is drawn through a window of them
Span = tuple[int, int]  # (start, stop) of the positions drawn on one axis


def _cell(n: int, size: float) -> float:
    return float(min(44.0, max(min(size / max(n, 1), 44.0), min(12.0, MAX_MAP_PX / max(n, 1)))))


def edit_window(status: tuple[str, ...], start: int | None = None, size: int = EDIT_WINDOW) -> Span:
    """The positions one axis draws: all when they fit, else `size` of them from `start` (by default centred on the
    first position the edit touched), kept inside the axis."""
    n = len(status)
    if n <= size:
        return 0, n
    if start is None:
        start = next((i for i, s in enumerate(status) if s != SAME), 0) - size // 2
    start = min(max(0, start), n - size)
    return start, start + size


def aligned_difference_frame(diff: AlignedDifference, layer: int, head: int | None, rows: Span | None = None,
                             cols: Span | None = None) -> pd.DataFrame:
    """One row per aligned cell of the window (`rows`, `cols`: all by default; indices count from its first row and
    column): positions, labels, A's and B's weights (NaN where a side lacks the cell), B − A."""
    (r0, r1), (c0, c1) = rows or (0, len(diff.query_tokens)), cols or (0, len(diff.key_tokens))
    a, b = diff.a[layer, :, r0:r1, c0:c1], diff.b[layer, :, r0:r1, c0:c1]
    a, b = (a.mean(0), b.mean(0)) if head is None else (a[head], b[head])
    q, k = a.shape
    qi, ki = np.repeat(np.arange(q), k), np.tile(np.arange(k), q)
    queries = np.asarray([visible_token(t) for t in diff.query_tokens[r0:r1]], dtype=object)
    keys = np.asarray([visible_token(t) for t in diff.key_tokens[c0:c1]], dtype=object)
    row_is = np.asarray(diff.query_status[r0:r1], dtype=object)
    column_is = np.asarray(diff.key_status[c0:c1], dtype=object)
    difference = np.nan_to_num(b) - np.nan_to_num(a)  # a missing side counts as 0 (AlignedDifference.difference)
    frame = pd.DataFrame({"query_index": qi, "query_token": queries[qi], "key_index": ki, "key_token": keys[ki],
                          "a": a.ravel(), "b": b.ravel(), "difference": difference.ravel(),
                          "row": row_is[qi], "column": column_is[ki]})
    frame["difference_text"] = frame["difference"].map("{:+.3f}".format)
    return frame


def aligned_difference_heatmap(diff: AlignedDifference, layer: int, head: int | None = None, *, size: int = 420,
                               title: str = "", rows: Span | None = None, cols: Span | None = None) -> alt.Chart:
    """B − A on a fixed −1..1 scale, queries down and keys across on the aligned axes, through a window of `rows`
    and `cols` (default: `edit_window` of each axis, all of a short one)."""
    rows, cols = rows or edit_window(diff.query_status), cols or edit_window(diff.key_status)
    frame = aligned_difference_frame(diff, layer, head, rows, cols)
    queries, keys = diff.query_tokens[rows[0]:rows[1]], diff.key_tokens[cols[0]:cols[1]]
    cell = min(_cell(len(queries), size), _cell(len(keys), size))
    return difference_chart(frame, queries, keys, diff.kind, cell, title,
                            (alt.Tooltip("row:N", title="row is"), alt.Tooltip("column:N", title="column is")))


def head_movement_heatmap(ranking: pd.DataFrame, kind: str, *, title: str = "", width: int = 420) -> alt.Chart:
    """Layers x heads of one kind, coloured by the mean |B − A| over aligned cells (how far the attention moved)."""
    frame = ranking[ranking["kind"] == kind].assign(layer_label=lambda f: f["layer"] + 1,
                                                     head_label=lambda f: f["head"] + 1)
    n_heads, n_layers = int(frame["head"].max()) + 1, int(frame["layer"].max()) + 1
    cell = float(min(36.0, max(8.0, width / max(n_heads, 1))))
    return alt.Chart(frame).mark_rect(stroke="white", strokeWidth=0.5 if cell >= 14 else 0).encode(
        x=alt.X("head_label:O", title="head"), y=alt.Y("layer_label:O", title="layer"),
        color=alt.Color("mean_abs:Q", title="mean |B − A|", scale=alt.Scale(scheme="oranges", domainMin=0)),
        tooltip=[alt.Tooltip("layer_label:O", title="layer"), alt.Tooltip("head_label:O", title="head"),
                 alt.Tooltip("mean_abs:Q", title="mean |B − A|", format=".4f"),
                 alt.Tooltip("max_abs:Q", title="largest |B − A|", format=".3f")],
    ).properties(width=cell * n_heads, height=min(cell, 24.0) * n_layers, autosize=AUTOSIZE,
                 title=alt.TitleParams(title, anchor="start", fontSize=14))
