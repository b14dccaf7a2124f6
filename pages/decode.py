"""Decode: step through greedy decoding one token at a time, force a token, compare with teacher forcing."""
from functools import partial

import streamlit as st

from transformer.decode import MAX_INPUT_CHARS
from ui.links import write_view
from ui.shell import ensure_frame
from ui.views import (
    bind_reference,
    bind_text,
    decode_results,
    greedy_or_message,
    require_model,
    sampled_or_message,
    sampling_controls,
    show_beam_tree,
    share_reference,
    share_text,
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

bind_text("decode_text", active)
st.session_state.setdefault("decode_top_k", 5)
col_text, col_ref, col_k = st.columns([5, 4, 1])
text = col_text.text_input(active.family.input_role.capitalize(), key="decode_text", on_change=share_text,
                           args=("decode_text",),
                           max_chars=MAX_INPUT_CHARS)
bind_reference("decode_reference", active, text)
reference = col_ref.text_input("Reference output (for teacher forcing)", key="decode_reference",
                               on_change=share_reference, args=("decode_reference",), max_chars=MAX_INPUT_CHARS,
                               help="The decoder is fed this target instead of its own output. Leave empty to skip.")
top_k = col_k.number_input("Top-k", min_value=2, max_value=20, step=1, key="decode_top_k")

sampling = sampling_controls(active)
free = (greedy_or_message(active, text, top_k=top_k) if sampling is None else
        sampled_or_message(active, text, top_k, sampling))
if free is None:
    st.stop()
results, prefix = decode_results(active, text, reference, free, top_k)
show_output_cards(results, prefix)
ablated, ablate_heads = show_ablation_panel(active, text, free, top_k)
show_beam_tree(active, text)
show_patched_link(active, text)  # opened from a click on Compare's patching map
show_step_through(active, text, reference, results, ablated, ablate_heads, after=partial(write_view, "decode"))
