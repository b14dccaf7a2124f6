"""Find heads (docs/finding-heads.md): every head of every kind as a point of a scatter whose axes and colour are
picked from the corpus statistics and the long-range scores, a click opening that head's page; the same heads as a
sortable table. Drawn from the statistics computed for the model in this session."""
from __future__ import annotations

import streamlit as st

from transformer.analysis import FINDER_COLUMNS, NOMINAL, CorpusStats, finder_table, head_finder_frame, long_range_heads
from transformer.charts import FINDER_SELECTION, head_finder_chart
from transformer.model import Head
from ui.models import MODEL_KEY, ActiveModel

from ..kit import LINK_PARAMS, show_chart

HEAD_PAGE = "pages/head.py"
LONG_RANGE_KEY = "finder_long_range"  # (model cache key, LongRange): the detectors last run for a model
CHOICES = [*FINDER_COLUMNS, *NOMINAL]


def open_head_page(head: Head) -> None:
    """Switch to the head's page (its pickers set to the head), with its link: the model and the head."""
    keys = LINK_PARAMS["head"]
    st.session_state[keys["kind"]], st.session_state[keys["layer"]] = head.kind, head.layer
    st.session_state[keys["head"]] = head.head
    link = {"model": st.session_state.get(MODEL_KEY, ""), "kind": head.kind, "layer": str(head.layer + 1),
            "head": str(head.head + 1)}
    st.switch_page(HEAD_PAGE, query_params=link)


def clicked_head(key: str) -> Head | None:
    """The head a click on the finder (its chart's `key`) picked, if any."""
    picked = ((st.session_state.get(key) or {}).get("selection") or {}).get(FINDER_SELECTION) or []
    label = picked[0].get("label") if picked and isinstance(picked[0], dict) else None
    return Head.parse(label) if label else None


def _long_range(active: ActiveModel, key: str):
    """The long-range detectors' result for this model: kept, or run on the button's click (None before)."""
    kept = st.session_state.get(LONG_RANGE_KEY)
    if kept is not None and kept[0] == active.cache_key:
        return kept[1]
    if st.button("Run the long-range detectors", key=f"{key}_long_range", icon=":material/radar:",
                 help="Induction and retrieval scores of the causal self-attention's heads (needle-in-a-haystack "
                      "inputs) and every head's pattern label, from synthetic inputs: no text needed."):
        with st.spinner("Reading synthetic inputs…"):
            found = long_range_heads(active.adapter)
        st.session_state[LONG_RANGE_KEY] = (active.cache_key, found)
        st.rerun()  # drawn again without the button
    return None


def show_head_finder(active: ActiveModel, stats: CorpusStats, *, key: str) -> None:
    """The finder's scatter (a click opens that head's page) and table for the statistics `stats`."""
    found = _long_range(active, key)
    frame = head_finder_frame(stats, long_range=found)
    c_x, c_y, c_colour = st.columns(3)
    for name, default, column in (("x", "entropy", c_x), ("y", "max_weight", c_y), ("colour", "kind", c_colour)):
        st.session_state.setdefault(f"{key}_{name}", default)
        column.selectbox({"x": "Across", "y": "Up", "colour": "Colour"}[name], CHOICES, key=f"{key}_{name}",
                         help="\n\n".join(f"**{n}**: {w}" for n, w in FINDER_COLUMNS.items()))
    x, y, colour = (st.session_state[f"{key}_{n}"] for n in ("x", "y", "colour"))
    chart_key = f"{key}_chart"
    head = clicked_head(chart_key)
    if head is not None:
        st.session_state.pop(chart_key, None)
        open_head_page(head)
    show_chart(head_finder_chart(frame, x, y, colour), key=chart_key, on_select="rerun",
               selection_mode=FINDER_SELECTION, width="content")
    n_a = "" if found is not None else " Induction, retrieval and the pattern: run the long-range detectors."
    st.caption(f"A point a head; a click opens its page. Induction and retrieval apply to causal self-attention "
               f"only (n/a elsewhere); the ablation estimate is n/a until kept.{n_a}")
    st.dataframe(finder_table(frame, sort=y if y not in NOMINAL else "max_weight"), hide_index=True,
                 key=f"{key}_table", height=260, column_config={
                     name: st.column_config.NumberColumn(name, format="%.3f", help=what)
                     for name, what in FINDER_COLUMNS.items()})
