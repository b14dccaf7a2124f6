"""The line view (BertViz's head view): queries in one column, keys in the other, one line per (head, query, key)
whose opacity is its weight, heads coloured; pointing at a token keeps only its lines. Lines fainter than a threshold
are left out (the title says so) and a long input shows a window of positions, so it never draws more than
`MAX_LINES` lines."""
from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd
import torch

from ..analysis import whole_maps
from ..decode import AttentionTrace
from .style import AUTOSIZE, visible_token

LINE_THRESHOLD = 0.02  # weights below this draw no line
LINE_WINDOW = 60  # positions shown at once on each side
ROW_PX = 18
MAX_LINES = 6000


def line_frame(trace: AttentionTrace, kind: str, layer: int, heads: Sequence[int],
               window: tuple[int, int] | None = None, threshold: float = LINE_THRESHOLD) -> pd.DataFrame:
    """One row per (head, query, key) line in the window with weight >= threshold: head, query_index, key_index
    (positions in the trace), weight (the map's own)."""
    whole_maps(trace, "line_view", kind)  # a long input's store: refused in one line, a window offered
    n_q, n_k = trace.axis_sizes(kind)
    start, stop = window if window is not None else (0, max(n_q, n_k))
    rows = []
    for head in heads:
        w = trace.matrix(kind, layer, head)[start:min(stop, n_q), start:min(stop, n_k)].float()
        q, k = torch.nonzero(w >= threshold, as_tuple=True)
        rows.append(pd.DataFrame({"head": f"H{head + 1}", "query_index": (q + start).tolist(),
                                  "key_index": (k + start).tolist(), "weight": w[q, k].tolist()}))
    frame = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["head", "query_index", "key_index", "weight"])
    return frame.nlargest(MAX_LINES, "weight") if len(frame) > MAX_LINES else frame


def line_view(trace: AttentionTrace, kind: str, layer: int, heads: Sequence[int], *,
              window: tuple[int, int] | None = None, threshold: float = LINE_THRESHOLD,
              width: int = 520) -> alt.LayerChart:
    """Two token columns (queries left, keys right) and the weighted lines between them."""
    q_tokens, k_tokens = trace.labels(kind)
    start, stop = window if window is not None else (0, max(len(q_tokens), len(k_tokens)))
    lines = line_frame(trace, kind, layer, heads, (start, stop), threshold)
    lines = lines.assign(left=0.0, right=1.0)
    left = pd.DataFrame({"query_index": range(start, min(stop, len(q_tokens)))})
    left["token"] = [visible_token(q_tokens[i]) for i in left["query_index"]]
    left["x"] = 0.0
    right = pd.DataFrame({"key_index": range(start, min(stop, len(k_tokens)))})
    right["token"] = [visible_token(k_tokens[i]) for i in right["key_index"]]
    right["x"] = 1.0
    n_rows = max(len(left), len(right), 1)
    y = alt.Scale(domain=[start - 0.5, start + n_rows - 0.5], reverse=True)
    pick_q = alt.selection_point(fields=["query_index"], on="pointerover", clear="pointerout", name="line_query")
    pick_k = alt.selection_point(fields=["key_index"], on="pointerover", clear="pointerout", name="line_key")
    x = alt.Scale(domain=[-0.6, 1.6])
    rules = alt.Chart(lines).mark_rule(strokeWidth=2).encode(
        x=alt.X("left:Q", scale=x, axis=None), x2=alt.X2("right:Q"),
        y=alt.Y("query_index:Q", scale=y, axis=None), y2=alt.Y2("key_index:Q"),
        color=alt.Color("head:N", legend=alt.Legend(title="head", orient="top")),
        opacity=alt.condition(pick_q & pick_k, alt.Opacity("weight:Q", scale=alt.Scale(domain=[0, 1],
                                                                                          range=[0.1, 1]),
                                                              legend=None), alt.value(0.0)),
        tooltip=[alt.Tooltip("head:N"), alt.Tooltip("query_index:Q"), alt.Tooltip("key_index:Q"),
                 alt.Tooltip("weight:Q", format=".3f")])
    queries = alt.Chart(left).mark_text(align="right", dx=-4, fontSize=12).encode(
        x=alt.X("x:Q", scale=x), y=alt.Y("query_index:Q", scale=y), text=alt.Text("token:N"),
        tooltip=[alt.Tooltip("query_index:Q"), alt.Tooltip("token:N")]).add_params(pick_q)
    keys = alt.Chart(right).mark_text(align="left", dx=4, fontSize=12).encode(
        x=alt.X("x:Q", scale=x), y=alt.Y("key_index:Q", scale=y), text=alt.Text("token:N"),
        tooltip=[alt.Tooltip("key_index:Q"), alt.Tooltip("token:N")]).add_params(pick_k)
    # (channels as objects: a bare string goes through Altair's from_dict, ~15 ms each)
    title = (f"{trace.family.title(kind)} · layer {layer + 1} · line view · lines under {threshold:g} "
             f"left out")
    return alt.layer(rules, queries, keys, title=title).properties(width=width, height=ROW_PX * n_rows,
                                                                      autosize=AUTOSIZE)
