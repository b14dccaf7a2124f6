"""Decode: step through greedy decoding one token at a time, force a token, compare with teacher forcing."""
from functools import partial

import streamlit as st

from ui.links import write_link
from ui.shell import ensure_frame
from ui.views import decode_selection, require_model, show_decode_views, show_mask_page, show_weights

ensure_frame()
active = require_model()
if not active.family.decodes:  # an encoder-only model: predictions at the masks, nothing to step through
    show_weights(active)  # (no st.stop here: a stopped run does not write its view into the link)
    show_mask_page(active)
else:
    st.title("Decode", anchor=False)
    st.caption("Type a sentence and walk through the model's answer one token at a time: what each step attends to, "
               "which tokens it considered, and what happens if it had picked another one.")
    show_weights(active)
    sel = decode_selection(active)  # the input, the reference, top-k, sampling and the free-running decode
    if sel is None:
        st.stop()
    show_decode_views(sel, after=partial(write_link, "decode"))  # the outputs, heads off, beam tree, step-through
