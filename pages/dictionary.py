"""A dictionary's features: the finder, a page per feature, and training a dictionary on the model shown."""
import streamlit as st

from ui.shell import ensure_frame
from ui.views import require_model, show_dictionary_page

ensure_frame()
active = require_model()
st.title("Dictionary features", anchor=False)
st.caption("Sparse dictionaries on one site of the model (sparse autoencoders, SAELens's format): what each feature "
           "fires on, what it promotes, which heads read it (docs/dictionaries.md).")
show_dictionary_page(active)
