"""The layer x head alignment-score table, shown when the input has a gold alignment."""
from __future__ import annotations

from typing import Sequence

import streamlit as st

from transformer import charts
from transformer.alignment import alignment_scores
from transformer.trace import AttentionTrace


def show_alignment_scores(trace: AttentionTrace, gold: Sequence[int | None], *, key: str) -> None:
    """How often each cross-attention head's strongest weight falls on the gold source token."""
    scores = alignment_scores(trace, gold)
    scores["head"] = [charts.MEAN_HEAD if h == "mean" else int(h) for h in scores["head"]]  # one dtype for Arrow
    st.markdown("**Alignment score per head**: share of target tokens whose strongest cross-attention weight is "
                "on the gold source token")
    st.altair_chart(charts.alignment_table_chart(scores), key=key, width="content")
