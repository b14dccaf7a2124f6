"""A page's document section: where a decoder-only model with a long context takes a whole document (placed by the
Decode and Attention pages above their one-line input), and under its views the picked row's: grouped into words,
sentences, lines or turns, Inside one head, the logit lens at the decode steps, another model's row at a step, the
patching estimate at a step, and a window of the document offered as the page's own input for what needs every
weight."""
from __future__ import annotations

import streamlit as st

from transformer.analysis import attention_source
from ui.models import ActiveModel

from ..features import (
    LONG_HEAD_KEY,
    LONG_LAYER_KEY,
    LONG_ON_KEY,
    LONG_QUERY_KEY,
    show_document_map,
    show_long_compare,
    show_long_input,
    show_long_patching,
    show_long_rows,
    show_window_offer,
)
from ..kit import LINK_PARAMS

__all__ = ["show_document"]


def show_document(active: ActiveModel) -> None:
    """The 'Expand to a document' switch and, when on, the document's overview, exact zoom and a row's strip, then
    that row's grouped, inside-the-head, lens, Compare and patching views (the layer, head and row the document view
    picked)."""
    decoded = show_long_input(active)
    if decoded is None or attention_source(decoded[0].trace).holds_maps:  # a short decode: the page's own views
        return
    result, identity = decoded
    show_document_map(result, identity)  # the overview, the exact zoom, the steps' rows, a row's strip
    state = st.session_state
    layer, head = int(state.get(LONG_LAYER_KEY, 1)) - 1, int(state.get(LONG_HEAD_KEY, 1)) - 1
    query = int(state.get(LONG_QUERY_KEY, result.trace.shape("self")[2] - 1))
    show_long_rows(active, result, layer, head, query)
    show_long_compare(active, result, layer, head, state.get(LINK_PARAMS["decode"]["group"], "token"))
    show_long_patching(active, result)
    show_window_offer(active, result, query, LONG_ON_KEY)
