"""Attention explorer: any kind, layer and head (or their mean) for one input, the model view and head statistics."""
import streamlit as st

from ui.links import merged_words
from ui.shell import ensure_frame
from ui.views import (
    COMBINE,
    attention_ablation,
    attention_selection,
    current_output,
    require_model,
    show_agreement,
    show_attention_inside,
    show_contribution_map,
    show_corpus_statistics,
    show_large_map,
    show_line_view,
    show_model_view,
    show_sweep,
    show_weights,
)

ensure_frame()
active = require_model()
st.title("Attention explorer", anchor=False)
st.caption("Every attention map for one input. Rows are queries and columns keys; tokens are indexed by position, "
           "so repeated tokens stay apart. Maps come from the model in eval mode, on the tokens it actually saw.")
show_weights(active)

sel = attention_selection(active, words_asked=merged_words())  # the input and every picker, as one record
if sel is None:
    st.stop()
if sel.shows == "contribution" and sel.combine == "pick":
    show_contribution_map(sel)
else:
    if sel.shows == "contribution":
        st.info(f"{COMBINE[sel.combine]} combines weights only: the map shows weights.", icon=":material/info:")
    show_large_map(sel)
show_attention_inside(sel)
show_line_view(sel)

st.subheader("Switch heads off", anchor=False)
attention_ablation(sel)

st.subheader("Model view: every layer × head", anchor=False)
show_model_view(sel)

if active.family.decodes:
    output = current_output(active, sel.result, sel.reference)
    st.subheader("Which heads matter? Ablate each head in turn", anchor=False)
    show_sweep(active, sel.text, output, sel.reference if sel.reference is not None else sel.result.output_text,
               key="attention_sweep")
    st.subheader("Does attention agree with attribution?", anchor=False)
    show_agreement(active, sel.text, output, sel.result.trace, key="attention_agreement",
                   merged=sel.maps is not sel.result.trace)
else:  # the sweep and the agreement score an output the model writes; an encoder-only model predicts at masks
    st.caption("An encoder-only model writes no output to sweep or attribute: the predictions at the masks with heads "
               "switched off, and the tokens a prediction leans on, are on the Decode page (Predict at the masks).")
st.subheader("Head statistics over a corpus", anchor=False)
show_corpus_statistics(active, key="attention_corpus")
