"""Attention explorer: any kind, layer and head (or their mean) for one input, the model view and head statistics."""
import streamlit as st

from ui.shell import ensure_frame
from ui.views import attention_selection, require_model, show_attention_views, show_weights

ensure_frame()
active = require_model()
st.title("Attention explorer", anchor=False)
st.caption("Every attention map for one input. Rows are queries and columns keys; tokens are indexed by position, "
           "so repeated tokens stay apart. Maps come from the model in eval mode, on the tokens it actually saw.")
show_weights(active)

sel = attention_selection(active)  # the input and every picker, as one record
if sel is None:
    st.stop()
show_attention_views(sel)  # the map, Inside one head, the line view, heads off, the model view, head studies
