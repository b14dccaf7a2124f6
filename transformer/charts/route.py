"""The route of an output token, drawn: the residual stream's points (layer, position) of the encoder and decoder
that a prediction drew on, as points, and the edges through heads, MLPs and the residual as rules weighted by
importance (`transformer.analysis.why.routes`; Ferrando & Voita 2024); a click on an edge selects it (ROUTE_EDGE)."""
from __future__ import annotations

from typing import Any, Mapping

import altair as alt
import pandas as pd

from ..analysis import Route, RouteGraph, node_label
from .style import visible_token

ROUTE_EDGE = "route_edge"  # the point selection of a route chart: the clicked edge's `via`
EDGE_KINDS = {"residual": "residual", "mlp": "MLP", "cross": "cross-attention head", "self": "self-attention head"}
MAX_WIDTH = 680  # the plotting area; with its axis and labels it fits the page's column beside the sidebar
AUTOSIZE = {"type": "pad", "contains": "padding"}  # the chart grows by its labels and legend


def edge_kind(via: str) -> str:
    """What an edge goes through, in words (one of EDGE_KINDS' values)."""
    if via == "residual":
        return EDGE_KINDS["residual"]
    if via.endswith(".mlp"):
        return EDGE_KINDS["mlp"]
    return EDGE_KINDS["cross"] if via.startswith("cross:") else EDGE_KINDS["self"]


def route_frames(graph: RouteGraph, found: Route, tokens: Mapping[str, tuple[str, ...]]
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(nodes, edges, axis labels): each stack's positions side by side on x (the encoder first), depth on y."""
    offsets, at = {}, 0
    for stack in ("encoder", "decoder"):
        if stack in tokens:
            offsets[stack], at = at, at + len(tokens[stack]) + 1

    def xy(node: tuple[str, int, int]) -> tuple[int, int]:
        return offsets[node[0]] + node[2], node[1]
    nodes = pd.DataFrame([{"x": xy(n)[0], "y": xy(n)[1], "node": node_label(graph, n),
                           "token": visible_token(tokens[n[0]][n[2]])} for n in found.nodes])
    edges = pd.DataFrame([{"x": xy(e.source)[0], "y": xy(e.source)[1], "x2": xy(e.target)[0], "y2": xy(e.target)[1],
                           "via": e.via, "kind": edge_kind(e.via), "importance": e.importance,
                           "from": node_label(graph, e.source), "to": node_label(graph, e.target)}
                          for e in found.edges], columns=["x", "y", "x2", "y2", "via", "kind", "importance", "from",
                                                          "to"])
    axis = pd.DataFrame([{"x": offsets[s] + i, "y": -1, "token": visible_token(t), "stack": s}
                         for s, toks in tokens.items() for i, t in enumerate(toks)])
    return nodes, edges, axis


def route_chart(graph: RouteGraph, found: Route, tokens: Mapping[str, tuple[str, ...]], title: str) -> alt.LayerChart:
    """Nodes as points, edges as rules (width: importance), tokens under each stack; at most MAX_WIDTH px wide."""
    nodes, edges, axis = route_frames(graph, found, tokens)
    n_x = max(int(axis["x"].max()) + 1, 1)
    n_y = max(int(nodes["y"].max()) + 2, 2)
    width = float(min(MAX_WIDTH, max(240, 24 * n_x)))
    height = float(min(560, max(200, 16 * n_y)))
    x = alt.X("x:Q", axis=None, scale=alt.Scale(domain=[-0.5, n_x - 0.5]))
    y = alt.Y("y:Q", title="depth (0: embeddings)", scale=alt.Scale(domain=[-1.5, n_y - 1]))
    pick = alt.selection_point(name=ROUTE_EDGE, fields=["via"], on="click", toggle=False)
    rules = alt.Chart(edges).mark_rule(opacity=0.75).encode(
        x=x, y=y, x2="x2:Q", y2="y2:Q",
        color=alt.Color("kind:N", title="through", scale=alt.Scale(domain=list(EDGE_KINDS.values())),
                        legend=alt.Legend(orient="bottom", direction="horizontal")),
        strokeWidth=alt.StrokeWidth("importance:Q", scale=alt.Scale(domain=[0, 1], range=[1, 7]), legend=None),
        tooltip=["via:N", "from:N", "to:N", alt.Tooltip("importance:Q", format=".3f")]).add_params(pick)
    points = alt.Chart(nodes).mark_circle(size=45, color="#333").encode(x=x, y=y, tooltip=["node:N", "token:N"])
    labels = alt.Chart(axis).mark_text(angle=300, align="right", fontSize=10, dy=4).encode(
        x=x, y=y, text="token:N", color=alt.value("#555"))
    return alt.layer(rules, points, labels).properties(width=width, height=height, title=title,
                                                      autosize=AUTOSIZE)


def clicked_via(event: Any) -> str | None:
    """The `via` of the clicked edge of a route chart from Streamlit's selection state, or None."""
    points = ((event or {}).get("selection") or {}).get(ROUTE_EDGE) or []
    via = points[0].get("via") if points and isinstance(points[0], Mapping) else None
    return via if isinstance(via, str) else None
