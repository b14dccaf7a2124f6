"""Heads that build on heads (Attention page): the Q-, K- and V-composition of every earlier head with every later
head that reads it (Elhage et al. 2021), a map per type with its strongest pairs, and a click through to both heads.
Scored once per weights and kept."""
from __future__ import annotations

import streamlit as st

from transformer.adapters import ResidualPathError
from transformer.analysis import strongest
from transformer.charts import COMPOSITION_PAIR, clicked_composition_pair, composition_heatmap
from transformer.model import Head, HeadError

from ..kit import PAGE_PX, Selection, composition_for, show_chart

TYPES = {"q": "Q (queries read it)", "k": "K (keys read it)", "v": "V (values read it)"}
PAIRS_LISTED = 8


def open_head(kind_key: str, layer_key: str, head_key: str, label: str) -> None:
    """Callback: the page's kind, layer and head pickers set to the head `label` (enc:L1H2 …)."""
    try:
        head = Head.parse(label)
    except HeadError:
        return
    st.session_state[kind_key], st.session_state[layer_key], st.session_state[head_key] = head


def show_composition(sel: Selection) -> None:
    """The composition maps of the selection's model (computed when the expander opens, kept per weights)."""
    with st.expander("Heads that build on heads: Q-, K- and V-composition", key=sel.key("composition_open"),
                     on_change="rerun", icon=":material/account_tree:") as box:
        if not box.open:
            return
        active = sel.model
        try:
            frame = composition_for(active)
        except ResidualPathError as exc:
            st.warning(str(exc), icon=":material/error:")
            return
        if frame.empty or frame[["q", "k", "v"]].isna().all().all():
            st.info(f"{active.option.name}: no head reads another head's output (one attention layer), so there is "
                    "no composition to score.", icon=":material/info:")
            return
        step = "" if active.weights_step is None else f" · weights at step {active.weights_step:,}"
        st.markdown(f"**{active.option.name}{step}** · composition from the weights alone, the same for every input")
        st.caption("‖OV¹·QK²‖ / (‖OV¹‖‖QK²‖) for Q (QK²ᵀ for K, OV² for V): how much of what the earlier head writes "
                   "the later head's queries, keys or values read (Elhage et al. 2021, TransformerLens's convention; "
                   "norm gains folded in). Click a cell to open either head.")
        keys = [sel.param_key(p) for p in ("kind", "layer", "head")]
        # only the open tab's map is built and drawn (bart-large's heads: 87,552 cells a map, ~7 s of a browser's CPU
        # each; all three at once froze the page for 23 s on 2 cores)
        tabs = st.tabs(list(TYPES.values()), key=sel.key("composition_type"), on_change="rerun")
        for mode, tab in zip(TYPES, tabs, strict=True):
            if not tab.open:
                continue
            with tab:
                if frame[mode].isna().all():
                    st.caption(f"No head reads another through its {mode.upper()} side in this model.")
                    continue
                pick_key = sel.key(f"composition_{mode}")
                event = show_chart(composition_heatmap(frame, mode, max_width=PAGE_PX - 260), key=pick_key,
                                   width="content", on_select="rerun", selection_mode=COMPOSITION_PAIR)
                best = strongest(frame, mode, PAIRS_LISTED)
                st.dataframe(best, hide_index=True, key=sel.key(f"composition_{mode}_pairs"))
                pair = clicked_composition_pair(event) or (str(best.iloc[0]["from"]), str(best.iloc[0]["to"]))
                cols = st.columns(2)
                for col, label, role in zip(cols, pair, ("writes", "reads"), strict=True):
                    col.button(f"Open {label} ({role})", key=sel.key(f"composition_{mode}_{role}"),
                               on_click=open_head, args=(*keys, label), icon=":material/open_in_new:")
