"""Decode: step through greedy decoding one token at a time, force a token, compare with teacher forcing."""
from functools import partial

import streamlit as st

from ui.links import write_link
from ui.shell import ensure_frame
from ui.views import (
    decode_results,
    decode_selection,
    require_model,
    show_beam_tree,
    show_ablation_panel,
    show_output_cards,
    show_patched_link,
    show_step_through,
    show_mask_page,
    show_weights,
)

ensure_frame()
active = require_model()
if not active.family.decodes:  # an encoder-only model: predictions at the masks, nothing to step through
    show_weights(active)
    show_mask_page(active)
    st.stop()
st.title("Decode", anchor=False)
st.caption("Type a sentence and walk through the model's answer one token at a time: what each step attends to, "
           "which tokens it considered, and what happens if it had picked another one.")
show_weights(active)

sel = decode_selection(active)  # the input, the reference, top-k, sampling and the free-running decode
if sel is None:
    st.stop()
results, prefix = decode_results(sel)
show_output_cards(results, prefix)
ablated = show_ablation_panel(sel)
show_beam_tree(sel)
show_patched_link(sel)  # opened from a click on Compare's patching map
show_step_through(sel, results, ablated, after=partial(write_link, "decode"))
