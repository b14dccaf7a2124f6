"""The Attention page below its input row: the map (weights or contributions), Inside one head, the line view,
heads switched off, the model view, which heads matter (sweep, agreement with attribution) and corpus statistics;
for a document (its decode kept the attention store) the views that read rows, and one refusal of the rest."""
from __future__ import annotations

import streamlit as st

from ..features import (
    attention_ablation,
    circuit_link,
    current_output,
    latest_corpus,
    latest_corpus_statistics,
    show_agreement,
    show_attention_inside,
    show_attention_qk,
    show_composition,
    show_contribution_map,
    show_corpus_statistics,
    show_document_feature_sources,
    show_grouped_row,
    show_head_finder,
    show_lens_at_steps,
    show_line_view,
    show_model_b_row,
    show_step_patching,
    show_sweep,
)
from ..kit import COMBINE, Selection, holds_maps, show_window_offer
from .attention import show_large_map, show_model_view


def show_attention_views(sel: Selection) -> None:
    """Every view of the Attention page for the record its input row made, in the page's order."""
    if not holds_maps(sel):
        show_document_views(sel)
        return
    if sel.shows == "contribution" and sel.combine == "pick":
        show_contribution_map(sel)
    else:
        if sel.shows == "contribution":
            st.info(f"{COMBINE[sel.combine]} combines weights only: the map shows weights.", icon=":material/info:")
        show_large_map(sel)
    show_attention_inside(sel)
    show_attention_qk(sel, sel.param_key("qkq"), sel.param_key("qkk"))
    show_line_view(sel)

    st.subheader("Switch heads off", anchor=False)
    attention_ablation(sel)

    st.subheader("Model view: every layer × head", anchor=False)
    show_model_view(sel)
    show_composition(sel)

    active = sel.model
    if active.family.decodes:
        output = current_output(active, sel.result, sel.reference)
        st.subheader("Which heads matter? Ablate each head in turn", anchor=False)
        show_sweep(active, sel.text, output, sel.reference if sel.reference is not None else sel.result.output_text,
                   key="attention_sweep")
        st.subheader("Does attention agree with attribution?", anchor=False)
        show_agreement(active, sel.text, output, sel.result.trace, key="attention_agreement",
                       merged=sel.maps is not sel.result.trace)
        circuit_link(active, sel.text)
    else:  # the sweep and the agreement score an output the model writes; an encoder-only model predicts at masks
        st.caption("An encoder-only model writes no output to sweep or attribute: the predictions at the masks with "
                   "heads switched off, and the tokens a prediction leans on, are on the Decode page (Predict at the "
                   "masks).")
        circuit_link(active, sel.text)
    st.subheader("Head statistics over a corpus", anchor=False)
    show_corpus_statistics(active, key="attention_corpus")
    stats = latest_corpus_statistics(active)
    if stats is not None and stats.kept is not None:
        st.subheader("Find heads", anchor=False)
        show_head_finder(active, stats, key="attention_finder", corpus=latest_corpus(active))


def show_document_views(sel: Selection) -> None:
    """A document's views (Decode and Attention): the large map (the steps' rows, the overview, the exact zoom, the
    row's strip), the row grouped, Inside one head for the row, the lens at the decode steps, another model's row
    at a step, the patching estimate at a step, a dictionary feature's sources at the row; what needs whole maps
    refused once, with a window offered."""
    show_large_map(sel)
    show_grouped_row(sel)
    show_attention_inside(sel)
    show_lens_at_steps(sel)
    show_model_b_row(sel)
    show_step_patching(sel)
    show_document_feature_sources(sel)
    show_window_offer(sel)
