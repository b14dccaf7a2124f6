"""One head's page (docs/finding-heads.md): the head picked by kind, layer and head; from the corpus statistics
computed for the model in this session (or computed here), its strongest rows by decile of the peak weight, its
attention distances, the tokens it attends from and to, its one-pass ablation estimate (the head finder's), its
statistics against its layer, and the page as HTML."""
from __future__ import annotations

from functools import partial

import streamlit as st

from transformer.charts import head_page_charts, head_page_html
from transformer.decode import ALL_TITLES
from transformer.model import Head
from ui.models import ActiveModel

from ..features import latest_corpus_statistics, show_corpus_statistics
from ..kit import LINK_PARAMS, show_chart
from .head_estimate import page_estimate, show_estimate
from .head_partners import show_partners

KEYS = LINK_PARAMS["head"]


def head_picker(active: ActiveModel) -> Head:
    """Kind, layer and head (the page's link names them), kept within the model's sizes."""
    counts = active.adapter.head_counts()
    state = st.session_state
    if state.get(KEYS["kind"]) not in counts:
        state[KEYS["kind"]] = next(iter(counts))
    c_kind, c_layer, c_head = st.columns([2, 1, 1])
    kind = c_kind.radio("Kind", list(counts), format_func=ALL_TITLES.__getitem__, key=KEYS["kind"], horizontal=True)
    n_layers, n_heads = counts[kind]
    for name, n in (("layer", n_layers), ("head", n_heads)):
        if not isinstance(state.get(KEYS[name]), int) or not 0 <= state[KEYS[name]] < n:
            state[KEYS[name]] = 0
    layer = c_layer.selectbox("Layer", range(n_layers), format_func=lambda i: str(i + 1), key=KEYS["layer"])
    head = c_head.selectbox("Head", range(n_heads), format_func=lambda i: str(i + 1), key=KEYS["head"])
    return Head(kind, int(layer), int(head))


def show_head_page(active: ActiveModel) -> None:
    """The page below its title: the picker, then the head over the corpus (or the statistics to compute first)."""
    head = head_picker(active)
    stats = latest_corpus_statistics(active)
    if stats is None or stats.kept is None:
        show_partners(active, head)  # from the weights: no statistics needed
        st.info("A head's page is drawn from the head statistics over a corpus: compute them here (or on the "
                "Attention page).", icon=":material/query_stats:")
        show_corpus_statistics(active, key="head_corpus")
        stats = latest_corpus_statistics(active)
        if stats is None or stats.kept is None:
            return
    row = stats.frame.query("kind == @head.kind and layer == @head.layer and head == @head.head")
    if row.empty:
        st.info(f"These statistics have no {head.label}.", icon=":material/info:")
        return
    charts = head_page_charts(stats, head)
    st.caption(f"{head.label} over {stats.sentences:,} sentences: mean entropy {row['entropy'].iloc[0]:.2f} nats, "
               f"mean largest weight {row['max_weight'].iloc[0]:.2f}.")
    estimate = page_estimate(active, stats, head)
    show_estimate(estimate)
    st.subheader("Strongest rows, by decile of the peak weight", anchor=False)
    st.caption("Per decile of the row's largest weight (the first token and specials left out), the rows with the "
               "largest peaks; the top decile's first. The peak key is outlined.")
    if charts["examples"] is None:
        st.info("No row of this head puts weight on an ordinary token.", icon=":material/info:")
    else:
        show_chart(charts["examples"], key="head_page_examples", width="content")
    c_to, c_from = st.columns(2)
    with c_to:
        show_chart(charts["to"], key="head_page_to", width="content")
    with c_from:
        show_chart(charts["from"], key="head_page_from", width="content")
    if charts["distance"] is not None:
        show_chart(charts["distance"], key="head_page_distance", width="content")
    show_chart(charts["layer"], key="head_page_layer_chart", width="content")
    show_partners(active, head)
    st.download_button("Download this page (HTML)", partial(head_page_html, stats, head, model=active.adapter.name,
                                                            estimate=estimate),
                       file_name=f"{head.format('_')}.html", mime="text/html", key="head_page_download",
                       icon=":material/html:", help="One standalone page, made when clicked: the charts draw offline.")
