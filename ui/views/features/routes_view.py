"""The route of an output token (Decode page): for the current step, the graph of the residual stream's points
(layer, position) in the encoder and decoder that the prediction drew on, its edges through self-attention heads,
cross-attention heads and MLPs weighted by proximity (Ferrando & Voita 2024), pruned by one threshold; rebuilt at
each step, and a click on an edge opens its head in Inside one head."""
from __future__ import annotations

from functools import partial

import streamlit as st

from transformer.adapters import ResidualPathError
from transformer.analysis import ROUTE_THRESHOLD as THRESHOLD
from transformer.analysis import step_route
from transformer.charts import EDGE_KINDS, ROUTE_EDGE, clicked_via, edge_kind, route_chart, visible_token
from transformer.model import Head, HeadError

from ..kit import Selection, decode_parts_for, show_chart

HEAD_EDGES = (EDGE_KINDS["self"], EDGE_KINDS["cross"])  # an edge through a head: a click opens it


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
    if via is not None and edge_kind(via) in HEAD_EDGES:
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
        heads = list(dict.fromkeys(e.via for e in found.edges if edge_kind(e.via) in HEAD_EDGES))
        st.caption(f"{len(found.edges)} edges above {tau:.2f}, from the point that predicts step {step} downwards. "
                   "An edge's width is its importance: its proximity to the point it flows into, max(‖y‖₁ − "
                   "‖y − c‖₁, 0), normalised (Ferrando & Voita 2024, eq. 3). Click an edge to open its head.")
        if heads:
            cols = st.columns([2, 1], vertical_alignment="bottom")
            label = cols[0].selectbox("A head on this route", heads, key=sel.key("route_head"))
            cols[1].button("Open it in Inside one head", key=sel.key("route_open_head"), on_click=open_route_head,
                           args=(keys, label), icon=":material/open_in_new:")
