"""The layer x head alignment-score table, shown when the input has a gold alignment."""
from __future__ import annotations

import importlib
from typing import Sequence

import streamlit as st

from transformer import charts
from transformer.trace import AttentionTrace


def show_alignment_scores(trace: AttentionTrace, gold: Sequence[tuple[int, int]], *, key: str) -> None:
    """How well each cross-attention head follows the gold alignment (needs transformer.alignment)."""
    try:
        alignment = importlib.import_module("transformer.alignment")
    except ModuleNotFoundError:
        return
    scores = alignment.alignment_scores(trace, list(gold))
    if scores.empty:
        return
    st.markdown("**Alignment with the gold alignment** (cross-attention, per layer and head)")
    st.altair_chart(charts.alignment_table_chart(scores), key=key, width="content")
