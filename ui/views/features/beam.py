"""The beam tree on the Decode page: the search as a tree (pruned branches greyed), the final hypotheses
ranked, a node's attention at its step (every kind, layer and head), and "Decode from here", which forces that
node's prefix and lets the model go on greedily in the step-through."""
from __future__ import annotations

import streamlit as st

from transformer.charts import (
    beam_key_window,
    beam_tree_chart,
    clicked_beam_node,
    keys_that_fit,
    node_attention_chart,
    tree_window,
)
from transformer.decode import BeamTree, InputError, beam_tree
from ui.models import ActiveModel
from ui.server import shared

from ..kit import LINK_OPENS, LINK_PARAMS, PAGE_PX, Selection, chart_heading, md_token, show_chart
from ..kit import decode_state as ds

BEAM_OPEN_KEY = LINK_OPENS["decode"]["beam"]
WIDTH_KEY = LINK_PARAMS["decode"]["beam"]  # in the link while the tree is open
HYPOTHESIS_KEY = "decode_beam_hypothesis"
CHART_KEY = "decode_beam_chart"
NODE_KEY = "decode_beam_node"  # the node shown (not a widget: set by a click or the hypothesis picker)
MAX_WIDTH = 8


@shared
def _tree(model_key: str, _active: ActiveModel, text: str, width: int) -> BeamTree:
    return beam_tree(_active.adapter, text, width)


def _clicked() -> None:
    node = clicked_beam_node(st.session_state.get(CHART_KEY))
    if node is not None:
        st.session_state[NODE_KEY] = node


def _hypothesis_picked(tree: BeamTree) -> None:
    rank = st.session_state.get(HYPOTHESIS_KEY)
    if isinstance(rank, int) and 0 <= rank < len(tree.hypotheses):
        st.session_state[NODE_KEY] = tree.hypotheses[rank].node


def show_beam_tree(sel: Selection) -> None:
    """The expander "Beam search: the roads not taken" for the page's model and input, computed only while open."""
    active, text = sel.model, sel.text
    with st.expander("Beam search: the roads not taken", key=BEAM_OPEN_KEY, on_change="rerun",
                     icon=":material/account_tree:") as expander:
        if not expander.open:
            return
        st.session_state.setdefault(WIDTH_KEY, 4)
        width = st.number_input("Beam width", min_value=2, max_value=MAX_WIDTH, step=1, key=WIDTH_KEY)
        try:
            with st.spinner(f"Beam search with {active.option.name}…", show_time=True):
                tree = _tree(active.cache_key, active, text, int(width))
        except InputError as exc:
            st.warning(str(exc), icon=":material/edit_note:")
            return
        formula = (f"score = summed log-probability / length ** {tree.length_penalty:g} (Hugging Face's "
                   "generate(num_beams=…))" if tree.rule == "generate" else
                   f"score = summed log-probability / ((5 + length) / 6) ** {tree.length_penalty:g} (the GNMT length "
                   "penalty, Wu et al. 2016)")
        rule = ("by their score: how likely the whole output is, adjusted so that longer outputs are not penalised "
                "just for being long")
        st.dataframe([{"rank": i + 1, "output": h.text, "log p": round(h.log_prob, 3), "score": round(h.score, 3),
                       "ended": h.finished} for i, h in enumerate(tree.hypotheses)], hide_index=True, width="stretch")
        st.caption(f"The {len(tree.hypotheses)} final hypotheses of {active.option.name}, ranked {rule}.",
                   help=formula)
        node = st.session_state.get(NODE_KEY)
        if not isinstance(node, int) or not 0 < node < len(tree.nodes):
            node = tree.hypotheses[0].node
        n_steps = max(n.step for n in tree.nodes) + 1
        first, last = tree_window(tree, node, PAGE_PX)
        shown = "" if (first, last) == (0, n_steps + 1) else \
            f" · steps {max(first, 1)}–{last - 1} shown, around the node picked"
        chart_heading(f"The beam tree · width {tree.width} · {len(tree.nodes) - 1} candidates over {n_steps} steps"
                      + shown)
        show_chart(beam_tree_chart(tree, selected=node, max_width=PAGE_PX), key=CHART_KEY, width="content",
                   selection_mode=["beam_node"], on_select=_clicked)
        st.caption("Each column is a step, each dot a prefix the search considered (best at the top): blue kept, "
                   "green a final hypothesis, light blue ended but not among the best, grey pruned. Click a dot"
                   + (" (a final hypothesis picked below moves the steps shown)." if shown else "."))
        st.selectbox("Show a final hypothesis", list(range(len(tree.hypotheses))), key=HYPOTHESIS_KEY,
                     format_func=lambda i: f"{i + 1}: {tree.hypotheses[i].text or '∅'}",
                     on_change=_hypothesis_picked, args=(tree,))
        _show_node(active, text, tree, node)


def _show_node(active: ActiveModel, text: str, tree: BeamTree, node: int) -> None:
    path = tree.path(node)
    chosen = tree.nodes[node]
    tokens = tuple(n.token for n in path)
    st.markdown(f"**Prefix:** {' '.join(f'‹{md_token(t)}›' for t in tokens)} · step {chosen.step + 1} · "
                f"log p {chosen.log_prob:.3f} · {chosen.status}")
    st.button("Decode from here", key="decode_beam_from_here", icon=":material/call_split:",
              on_click=ds.decode_from_here, args=(active.task_name, text, tokens),
              help="Force this prefix and let the model decode greedily from there (the step-through above).")
    if chosen.attention is None:
        return
    prefix = list(tree.prefix_tokens) + [n.token for n in path[:-1]]
    family = active.family
    for kind, weights in chosen.attention.items():
        keys = list(tree.source_tokens) if kind == family.cross_kind else prefix[-weights.shape[-1]:]
        first, last = beam_key_window(weights, keys_that_fit(PAGE_PX))
        shown = "" if (first, last) == (0, len(keys)) else f" · keys {first + 1}–{last} of {len(keys)}"
        chart_heading(f"{family.title(kind)} of step {chosen.step + 1} on this hypothesis · every layer and head"
                      + shown)
        show_chart(node_attention_chart(weights, keys, max_width=PAGE_PX), key=f"decode_beam_attention_{kind}",
                   width="content")
