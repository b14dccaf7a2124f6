"""The line view on the Attention page: pick heads; a long input shows a window of positions the user moves."""
from __future__ import annotations

import streamlit as st

from transformer.charts import LINE_THRESHOLD, LINE_WINDOW, line_view
from transformer.decode import head_label

from ..kit import Selection, show_chart


def show_line_view(sel: Selection) -> None:
    """BertViz's head view for the selected layer: queries left, keys right, a line per head, query and key."""
    trace, kind, layer, page = sel.maps, sel.kind, sel.layer, sel.page
    with st.expander("Line view: every head's lines between the tokens", key=f"{page}_lines_open",
                     on_change="rerun", icon=":material/timeline:") as box:
        if not box.open:  # drawn only while open
            return
        n_heads = trace.n_heads
        st.session_state.setdefault(f"{page}_line_heads", list(range(min(n_heads, 4))))
        heads = st.multiselect("Heads", range(n_heads), format_func=lambda h: head_label(h),
                               key=f"{page}_line_heads")
        n = max(trace.axis_sizes(kind))
        window = None
        if n > LINE_WINDOW:
            first = st.slider("Positions shown", 1, n - LINE_WINDOW + 1, 1, key=f"{page}_line_window",
                              help=f"Past {LINE_WINDOW} positions lines stop being readable: move the window.")
            window = (first - 1, first - 1 + LINE_WINDOW)
        if not heads:
            st.info("Pick at least one head.", icon=":material/info:")
            return
        show_chart(line_view(trace, kind, layer, heads, window=window), key=f"{page}_line_view", width="content")
        st.caption(f"Point at a token to keep only its lines. A line's opacity is its weight; weights under "
                   f"{LINE_THRESHOLD:g} draw no line.")
