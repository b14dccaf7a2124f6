"""A query row's weights summed over words, sentences, lines or chat turns (the grouping is in the link), read
through the attention source: any length, the row alone recomputed (a document's store holds no n × n map)."""
from __future__ import annotations

import streamlit as st

from transformer.analysis import attention_source
from transformer.charts import group_bars_chart
from transformer.decode import group_sums, segment_groups, segment_labels
from ui.server import shared_cache, text_hash

from ..kit import GROUP_NAMES, Selection, show_chart

TOP_GROUPS = 12  # groups named in a grouped row's bars
CHART_PX = 600


def _groups(sel: Selection, labels: list[str], by: str) -> tuple[list[list[int]], list[str]]:
    def group() -> tuple[list[list[int]], list[str]]:
        groups = segment_groups(labels, by)
        return groups, segment_labels(labels, groups)

    key = ("row-groups", sel.model.cache_key, text_hash(sel.result.source_text), len(sel.result.steps), by)
    return shared_cache().get(key, group)


def show_grouped_row(sel: Selection) -> None:
    """The picked row's weights summed over each group of tokens (the page's grouping), the heaviest groups named."""
    trace = sel.result.trace
    source, labels = attention_source(trace), list(trace.decoder_input_tokens)
    query = sel.row if sel.row is not None else source.shape("self")[2] - 1
    by = sel.group
    if by == "token":
        return
    groups, names = _groups(sel, labels, by)
    head = sel.head if sel.head is not None else 0
    sums = group_sums(source.tile("self", sel.layer, head, [query], slice(None))[0], groups)
    shown = min(TOP_GROUPS, len(groups))
    show_chart(group_bars_chart(sums, names, f"Row {query:,} over {len(groups):,} {GROUP_NAMES[by]}: the {shown} "
                                "heaviest", top=TOP_GROUPS, width=CHART_PX))
    st.caption(f"The {len(groups):,} {GROUP_NAMES[by]} together hold {float(sums.sum()):.4f} of row {query:,}'s "
               f"weight (each the sum of its tokens').")
