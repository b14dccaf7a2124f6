"""The route of an output token (Decode page): for the current step, the graph of the residual stream's points
(layer, position) in the encoder and decoder that the prediction drew on, its edges through self-attention heads,
cross-attention heads and MLPs weighted by proximity (Ferrando & Voita 2024), pruned by one threshold; rebuilt at
each step, and a click on an edge opens its head in Inside one head."""
from __future__ import annotations

from functools import partial
from typing import Any, Mapping

import altair as alt
import pandas as pd
import streamlit as st

from transformer.adapters import ResidualPathError
from transformer.analysis import ROUTE_THRESHOLD as THRESHOLD
from transformer.analysis import Route, RouteGraph, node_label, step_route
from transformer.charts import visible_token
from transformer.model import Head, HeadError

from ..kit import Selection, decode_parts_for, show_chart

ROUTE_EDGE = "route_edge"
KINDS = {"residual": "residual", "mlp": "MLP", "cross": "cross-attention head", "self": "self-attention head"}
MAX_WIDTH = 680  # the plotting area; with its axis and labels it fits the page's column beside the sidebar
AUTOSIZE = {"type": "pad", "contains": "padding"}  # the chart grows by its labels and legend


def edge_kind(via: str) -> str:
    if via == "residual":
        return KINDS["residual"]
    if via.endswith(".mlp"):
        return KINDS["mlp"]
    return KINDS["cross"] if via.startswith("cross:") else KINDS["self"]


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
        color=alt.Color("kind:N", title="through", scale=alt.Scale(domain=list(KINDS.values())),
                        legend=alt.Legend(orient="bottom", direction="horizontal")),
        strokeWidth=alt.StrokeWidth("importance:Q", scale=alt.Scale(domain=[0, 1], range=[1, 7]), legend=None),
        tooltip=["via:N", "from:N", "to:N", alt.Tooltip("importance:Q", format=".3f")]).add_params(pick)
    points = alt.Chart(nodes).mark_circle(size=45, color="#333").encode(x=x, y=y, tooltip=["node:N", "token:N"])
    labels = alt.Chart(axis).mark_text(angle=300, align="right", fontSize=10, dy=4).encode(
        x=x, y=y, text="token:N", color=alt.value("#555"))
    return alt.layer(rules, points, labels).properties(width=width, height=height, title=title,
                                                      autosize=AUTOSIZE)


def clicked_via(event: Any) -> str | None:
    points = ((event or {}).get("selection") or {}).get(ROUTE_EDGE) or []
    via = points[0].get("via") if points and isinstance(points[0], Mapping) else None
    return via if isinstance(via, str) else None


def open_route_head(keys: tuple[str, str, str, str], label: str) -> None:
    """Callback: Inside one head opened on the head `label` (its kind, the page's layer and head)."""
    try:
        kind, layer, head = Head.parse(label)
    except HeadError:
        return
    open_key, kind_key, layer_key, head_key = keys
    st.session_state.update({open_key: True, kind_key: kind, layer_key: layer, head_key: head})


def _edge_clicked(chart_key: str, keys: tuple[str, str, str, str]) -> None:
    via = clicked_via(st.session_state.get(chart_key))
    if via is not None and edge_kind(via) in (KINDS["self"], KINDS["cross"]):
        open_route_head(keys, via)


def show_step_route(sel: Selection, open_widget: str, threshold_widget: str, keys: tuple[str, str, str, str]
                    ) -> None:
    """The route of the selection's step (the expander `open_widget`; the threshold slider `threshold_widget`)."""
    if st.session_state.get(threshold_widget) is not None:
        st.session_state.setdefault(open_widget, True)
    with st.expander("The route of this output token through the layers", key=open_widget, on_change="rerun",
                     icon=":material/route:") as box:
        if not box.open:
            return
        got = decode_parts_for(sel.model, sel.result)
        if got is None:
            return
        parts, graph = got
        st.session_state.setdefault(threshold_widget, THRESHOLD)
        tau = st.slider("Threshold", 0.0, 0.5, step=0.01, key=threshold_widget,
                        help="Edges whose importance (proximity share of what flows into a point) is above this.")
        step = (sel.step or 0) + 1
        try:
            found, _ = step_route(parts, step, float(tau), graph)
        except ResidualPathError as exc:
            st.warning(str(exc), icon=":material/error:")
            return
        tokens = {"decoder": parts.decoder_tokens}
        if parts.source_tokens and "encoder" in parts.capture.path.stacks:
            tokens = {"encoder": parts.source_tokens, **tokens}
        active = sel.model
        weights = "" if active.weights_step is None else f" · weights at step {active.weights_step:,}"
        title = f"{active.option.name}{weights} · step {step} → {visible_token(parts.outputs[step - 1])}"
        show_chart(route_chart(graph, found, tokens, title), key=sel.key("route"), width="content",
                   on_select=partial(_edge_clicked, sel.key("route"), keys), selection_mode=ROUTE_EDGE)
        heads = list(dict.fromkeys(e.via for e in found.edges if edge_kind(e.via) in (KINDS["self"], KINDS["cross"])))
        st.caption(f"{len(found.edges)} edges above {tau:.2f}, from the point that predicts step {step} downwards. "
                   "An edge's width is its importance: its proximity to the point it flows into, max(‖y‖₁ − "
                   "‖y − c‖₁, 0), normalised (Ferrando & Voita 2024, eq. 3). Click an edge to open its head.")
        if heads:
            cols = st.columns([2, 1], vertical_alignment="bottom")
            label = cols[0].selectbox("A head on this route", heads, key=sel.key("route_head"))
            cols[1].button("Open it in Inside one head", key=sel.key("route_open_head"), on_click=open_route_head,
                           args=(keys, label), icon=":material/open_in_new:")
