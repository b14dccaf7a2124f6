"""Learn: attention step by step on the live model — from a query meeting the keys to one greedy decoding step."""
import streamlit as st

from transformer.decode import MAX_INPUT_CHARS
from ui.shell import ensure_frame
from ui.views import bind_text, greedy_or_message, require_model, share_text, show_stage, show_weights, tour_navigation

ensure_frame()
active = require_model()
st.title("Learn: attention step by step", anchor=False)
st.caption("The computation tutorials build by hand — queries, keys, scaling, masks, softmax, values, heads — with "
           "this model's real numbers for your input. Next (→) reveals the next stage.")
show_weights(active)
bind_text("learn_text", active)
text = st.text_input(active.family.input_role.capitalize(), key="learn_text", on_change=share_text,
                     args=("learn_text",), max_chars=MAX_INPUT_CHARS)
result = greedy_or_message(active, text)
if result is None:
    st.stop()
stage = tour_navigation()
show_stage(active, result, stage)
