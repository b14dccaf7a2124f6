"""The layer x head alignment-score table, shown when the input has a gold alignment."""
from __future__ import annotations

from typing import Sequence

import streamlit as st

from transformer.analysis import alignment_scores
from transformer.charts import alignment_table_chart
from transformer.data import GoldSource
from transformer.decode import AttentionTrace

from ..kit import cached_chart, show_chart


def show_alignment_scores(trace: AttentionTrace, gold: Sequence[GoldSource], *, key: str) -> None:
    """How often each cross-attention head's strongest weight falls on the gold source token."""
    st.markdown("**Alignment score per head**: share of target tokens whose strongest cross-attention weight is "
                "on the gold source token")
    show_chart(cached_chart(alignment_table_chart, alignment_scores(trace, gold)), key=key, width="content")
