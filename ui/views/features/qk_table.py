"""What made this score (Attention and Decode pages): one head's score at a (query, key) cell taken apart into pairs
of residual parts (query part, key part) through the norms, frozen at this input, and W_Q / W_K, plus the model's
additive terms; the sum is shown beside the score the model computed. The parts are captured once per decode.
One level down, the same score over dictionary features (docs/dictionaries.md), where a dictionary of each stream the
head reads, trained on this model, sits in the checkpoints' `dictionaries/` folder."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from transformer.adapters import ResidualPathError
from transformer.analysis import DecodeParts, QKTable, qk_attribution
from transformer.charts import QK_CELL as QK_CELL  # the selection of a clickable map, for the views that show it
from transformer.charts import clicked_cell, qk_part_map, visible_token, with_cell_clicks
from transformer.model import Head

from ..kit import (
    LINK_PARAMS,
    PAGE_PX,
    Selection,
    chart_spec,
    decode_parts_for,
    per_head_refusal,
    show_chart,
    show_feature_cell,
)

HIDDEN = -1e30  # a term at or below this is the mask hiding the key
SCROLL_KEY = "studio_scroll_to"
# the panel is drawn after the script runs: look for it (and for its content, so it does not move after) a few times
_SCROLL_JS = """<script>
(() => {
  let tries = 0;
  const go = () => {
    const box = document.querySelector('.st-key-KEY');
    const ready = box && box.querySelector('[data-testid="stMarkdown"], [data-testid="stAlert"]');
    if (ready || (box && tries > 20)) { box.scrollIntoView({block: "start"}); return; }
    if (++tries < 60) setTimeout(go, 100);
  };
  go();
})();
</script>"""
TOP_PAIRS = 15


def clickable_cells(chart: Any) -> dict:
    """A map (an Altair layered chart or its spec from the chart cache) as a spec whose cells can be clicked
    (`transformer.charts.with_cell_clicks`); the spec given is left as it was."""
    return with_cell_clicks(chart if isinstance(chart, dict) else chart_spec(chart))


def open_clicked_cell(chart_key: str, query_widget: str | None, key_widget: str, open_widget: str) -> None:
    """Callback of a clickable map: What made this score opened on the clicked query (unless the view's query is
    fixed, as at Decode's step) and key."""
    cell = clicked_cell(st.session_state.get(chart_key))
    if cell is None:
        return
    if query_widget is not None:
        st.session_state[query_widget] = cell[0]
    st.session_state[key_widget], st.session_state[open_widget] = cell[1], True
    st.session_state[SCROLL_KEY] = open_widget  # the answer is brought into view once it is drawn


def scroll_to_answer(open_widget: str) -> None:
    """After a click on a map cell, scroll the opened panel to the top of the screen (it sits below the map, off the
    first screen); once, in the run the click started."""
    if st.session_state.get(SCROLL_KEY) != open_widget:
        return
    del st.session_state[SCROLL_KEY]
    st.html(_SCROLL_JS.replace("KEY", open_widget), unsafe_allow_javascript=True)


def hidden_by_mask(table: QKTable) -> bool:
    return any(v <= HIDDEN or math.isinf(v) for v in table.terms.values())


def show_qk(sel: Selection, kind: str, query: int, key_widget: str) -> QKTable | None:
    """The table of the selection's head at `query` (0-based on the kind's query axis) and a key picked here (the
    widget `key_widget`, defaulting to the key the head weighs most); returns the table shown, or None after a
    message."""
    if sel.head is None or sel.head < 0:
        per_head_refusal("A score is per head: pick one head (not the mean) to take its score apart.",
                         LINK_PARAMS.get(sel.page, {}).get("head"), sel.key("qk_pick_head"))
        return None
    got = decode_parts_for(sel.model, sel.result)
    if got is None:
        return None
    parts, _ = got
    head = Head(kind, sel.layer, sel.head)
    q_tokens, k_tokens = parts.tokens(kind)
    if not 0 <= query < len(q_tokens):
        st.warning(f"Query position {query + 1} is outside the input: {head.label} has query positions "
                   f"1–{len(q_tokens)}.", icon=":material/error:")
        return None
    asked = st.session_state.get(key_widget)
    if asked is not None and not 0 <= int(asked) < len(k_tokens):
        st.info(f"Key position {int(asked) + 1} is not in this input ({head.label} has key positions "
                f"1–{len(k_tokens)}): showing the key it weighs most.", icon=":material/info:")
        asked = None
    if asked is None:
        row = sel.result.trace.matrix(kind, sel.layer, sel.head)
        asked = int(row[query].argmax()) if query < row.shape[0] and row.shape[1] == len(k_tokens) else 0
    st.session_state[key_widget] = int(asked)
    key = st.selectbox("Key", range(len(k_tokens)), key=key_widget,
                       format_func=lambda j: f"{j + 1}: {visible_token(k_tokens[j])}")
    try:
        table = qk_attribution(parts.capture, head, query, int(key))
    except ResidualPathError as exc:
        st.warning(str(exc), icon=":material/error:")
        return None
    active = sel.model
    step = "" if active.weights_step is None else f" · weights at step {active.weights_step:,}"
    st.markdown(f"**{active.option.name}{step} · {head.label} · query {query + 1} ({visible_token(q_tokens[query])}) · "
                f"key {int(key) + 1} ({visible_token(k_tokens[int(key)])})**")
    if hidden_by_mask(table):
        st.info(f"Key {int(key) + 1} is hidden from query {query + 1} by the mask (weight 0): there is no score to "
                "take apart.", icon=":material/info:")
        return None
    pairs = float(table.contributions.sum())
    terms = " + ".join(f"{name} {value:+.4f}" for name, value in table.terms.items())
    st.markdown(f"Sum of the pairs **{pairs:+.4f}**" + (f" + terms ({terms})" if terms else "")
                + f" = **{table.total:+.4f}**; the score the model computed: **{table.score:+.4f}**.")
    if table.rules_line():
        st.markdown(table.rules_line()[0].upper() + table.rules_line()[1:] + ".")
    rope = " RoPE is applied to each part." if table.rotated else ""
    st.caption("Each part of the residual stream goes through every norm on its path frozen at this input's scale "
               f"(the norm's centring kept, its shift counted in `bias`) and through W_Q or W_K.{rope} A model that "
               "soft-caps its scores: this explains the score before the cap. Sources: Elhage et al. 2021 (the "
               "residual stream as a sum), docs/why-it-looks-there.md.")
    show_chart(qk_part_map(table, PAGE_PX - 200), key=f"{sel.page}_qk_map", width="content")
    top = pd.DataFrame(table.pairs()[:TOP_PAIRS], columns=["query part", "key part", "contribution"])
    named = pd.DataFrame([(name, "", value) for name, value in table.terms.items()],
                         columns=["query part", "key part", "contribution"])
    st.markdown(f"**The {min(TOP_PAIRS, len(top))} largest pairs** (and the model's additive terms)")
    st.dataframe(pd.concat([top, named], ignore_index=True), hide_index=True, key=f"{sel.page}_qk_pairs",
                 column_config={"contribution": st.column_config.NumberColumn(format="%+.4f")})
    show_feature_qk(sel, parts, head, query, int(key))
    return table


def show_attention_qk(sel: Selection, query_widget: str, key_widget: str) -> None:
    """Attention: "What made this score" for the page's kind, layer and head at a query and a key picked here."""
    if st.session_state.get(key_widget) is not None:
        st.session_state.setdefault(sel.key("qk_open"), True)  # a link naming the key opens it
    with st.expander("What made this score: the query and key taken apart", key=sel.key("qk_open"),
                     on_change="rerun", icon=":material/join_inner:") as box:
        if not box.open:  # captured and drawn only while open
            return
        scroll_to_answer(sel.key("qk_open"))
        q_tokens = sel.result.trace.labels(sel.kind)[0]
        asked = st.session_state.get(query_widget)
        if asked is not None and not 0 <= int(asked) < len(q_tokens):
            st.info(f"Query position {int(asked) + 1} is not in this input (positions 1–{len(q_tokens)}): showing "
                    "the last.", icon=":material/info:")
            asked = None
        st.session_state[query_widget] = len(q_tokens) - 1 if asked is None else int(asked)
        query = st.selectbox("Query", range(len(q_tokens)), key=query_widget,
                             format_func=lambda r: f"{r + 1}: {visible_token(q_tokens[r])}")
        show_qk(sel, sel.kind, int(query), key_widget)


def show_step_qk(sel: Selection, open_widget: str, key_widget: str) -> None:
    """Decode: "What made this score" for the page's head at the step's query (the map's kind) and a key picked."""
    if st.session_state.get(key_widget) is not None:
        st.session_state.setdefault(open_widget, True)
    with st.expander("What made this score at this step: the query and key taken apart", key=open_widget,
                     on_change="rerun", icon=":material/join_inner:") as box:
        if box.open:
            scroll_to_answer(open_widget)
            show_qk(sel, sel.kind, sel.result.trace.step_offset + (sel.step or 0), key_widget)


def show_feature_qk(sel: Selection, parts: DecodeParts, head: Head, query: int, key: int) -> None:
    """The score of `head` at (query, key) over the features of this model's dictionaries, behind a toggle (inside
    What made this score's expander, which cannot hold another)."""
    show_feature_cell(sel.model, parts.capture, head, query, key, sel.page)
