"""Learn: attention step by step on the live model — from a query meeting the keys to one greedy decoding step."""
import streamlit as st

from ui.shell import ensure_frame
from ui.views import learn_selection, require_model, show_stage, show_weights, tour_navigation

ensure_frame()
active = require_model()
st.title("Learn: attention step by step", anchor=False)
st.caption("The computation tutorials build by hand — queries, keys, scaling, masks, softmax, values, heads — with "
           "this model's real numbers for your input. Next (→) reveals the next stage.")
show_weights(active)
sel = learn_selection(active)  # the input and its decode
if sel is None:
    st.stop()
stage = tour_navigation()
show_stage(sel, stage)
