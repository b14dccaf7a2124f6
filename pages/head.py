"""One head over a corpus: its strongest rows by decile, distances, tokens from and to, and its layer."""
import streamlit as st

from ui.shell import ensure_frame
from ui.views import require_model, show_head_page

ensure_frame()
active = require_model()
st.title("One head over a corpus", anchor=False)
st.caption("What one head does across many sentences, not on the one typed (HeadVis, Anthropic 2026): its strongest "
           "rows, how far it looks, and the tokens it attends from and to.")
show_head_page(active)
