"""Inside one head (Attention and Decode pages): every stage of the picked head's computation for one query, with
the model's own numbers, and the contribution map ||alpha_ij W_O^h v_j|| beside the weights. The queries, keys and
values of an input are captured once, with its decode, and kept (a few per server): a new head is a lookup."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer.analysis import (
    CapturedDecode,
    HeadSelectionError,
    attention_source,
    capture_decode,
    computation_at,
    contributions,
    head_row,
    pool_row,
    trace_view,
)
from transformer.charts import STAGE_KEY_WINDOW as KEY_WINDOW
from transformer.charts import (
    STAGES,
    contribution_heatmap,
    row_strip_chart,
    row_strip_frames,
    stage_charts,
    stage_key_window,
    visible_token,
)
from transformer.decode import DecodeResult
from ui.models import ActiveModel
from ui.server import shared

from ..kit import (
    LINK_OPENS,
    LINK_PARAMS,
    Selection,
    cached_chart,
    per_head_refusal,
    show_chart,
    slide_downloads,
    slide_title,
)

MAP_VALUES = {"weight": "Weight", "contribution": "What each key adds"}
INSIDE_OPEN_KEY, INSIDE_KIND_KEY = LINK_OPENS["decode"]["inside"], LINK_PARAMS["decode"]["inside"]  # in Decode's link


@shared  # the byte-bounded shared cache (docs/head-computation.md: a capture's size)
def _capture(decode_key: tuple, _active: ActiveModel, _result: DecodeResult, reference: str | None
             ) -> CapturedDecode:
    return capture_decode(_active.adapter, _result, reference)


def _decode_key(active: ActiveModel, result: DecodeResult, reference: str | None) -> tuple:
    """What identifies a decode: the weights, the input, the mode, the reference and the tokens it chose."""
    reference = reference if result.mode == "teacher-forced" else None
    return active.cache_key, result.source_text, result.mode, reference, tuple(s.token_id for s in result.steps)


def captured_for(active: ActiveModel, result: DecodeResult, reference: str | None) -> CapturedDecode:
    """The decode's insides, captured on first use and kept with it (keyed by the weights and the decode)."""
    key = _decode_key(active, result, reference)
    with st.spinner(f"Reading {active.option.name}'s queries, keys and values…", show_time=True):
        return _capture(key, active, result, key[3])


def _captured_or_message(active: ActiveModel, result: DecodeResult, reference: str | None) -> CapturedDecode | None:
    """`captured_for`, or None after saying why this decode's insides cannot be shown."""
    try:
        return captured_for(active, result, reference)
    except HeadSelectionError as exc:
        st.warning(str(exc), icon=":material/error:")
        return None


@shared
def _contribution(decode_key: tuple, _active: ActiveModel, _captured: CapturedDecode, kind: str, layer: int,
                  head: int | None):
    return trace_view(_captured, kind, contributions(_active.adapter, _captured, kind, layer, head))


def _what(active: ActiveModel) -> str:
    step = "" if active.weights_step is None else f" · weights at step {active.weights_step:,}"
    return f"{active.option.name}{step}"


CONTRIBUTION_FORMULA = ("‖α_ij · W_O^h (W_V x_j + b_V)‖: the length of key j's value vector weighted by its "
                        "attention α_ij and put through the head's output projection W_O^h (Kobayashi et al. 2020); "
                        "for the mean of heads, the length of the heads' mean vector.")


def show_contribution_map(sel: Selection) -> None:
    """The contribution map of the selected head (or of the mean of heads: the norm of their mean vector) over the
    decode's rows and keys, said to be the contribution, with its formula."""
    active, result, reference, kind, layer, page = sel.model, sel.result, sel.reference, sel.kind, sel.layer, sel.page
    head = None if sel.head is None or sel.head < 0 else sel.head  # the mean of heads
    captured = _captured_or_message(active, result, reference)
    if captured is None:
        return
    matrix = _contribution(_decode_key(active, result, reference), active, captured, kind, layer, head)
    trace = result.trace
    queries, keys = trace.labels(kind)
    window = stage_key_window(len(keys), None, 60)
    if len(keys) > 60:
        first = st.slider("Keys shown", 1, len(keys) - 59, 1, key=f"{page}_contribution_keys",
                          help="A long input's contribution map shows 60 keys at a time.")
        window = (first - 1, first + 59)
    who = "mean of heads" if head is None else f"head {head + 1}"
    title = f"{trace.family.title(kind)} · layer {layer + 1} · {who} · contribution"
    chart = cached_chart(contribution_heatmap, matrix, queries, keys, title, window)  # a switch back: a lookup
    show_chart(chart, key=f"{page}_contribution_map", width="content")
    slide_downloads(chart, slide_title(active, result.source_text, reference).lines(title),
                    f"{kind}_layer{layer + 1}_{'mean' if head is None else f'head{head + 1}'}_contribution",
                    f"{page}_contribution")
    st.caption(f"{_what(active)}. Each cell is how much key j adds to the head's output at query i: its weight "
               "times the size of what it passes on, so a key with a large weight but a small value vector adds "
               "little. The map covers every piece; merging words and hiding sinks apply to the weight map only.",
               help=CONTRIBUTION_FORMULA)


def show_head_computation(sel: Selection, *, kind: str | None = None, row: int | None = None) -> None:
    """Every stage of the selection's head for one query (picked here unless `row`, the trace's row, is given), in
    the selection's kind unless `kind` names another (Decode picks the kind beside the view)."""
    active, result, reference, layer, head, page = sel.model, sel.result, sel.reference, sel.layer, sel.head, sel.page
    kind = sel.kind if kind is None else kind
    if head is None or head < 0:
        per_head_refusal("The computation is per head: pick one head (not the mean) to see it.",
                         LINK_PARAMS.get(sel.page, {}).get("head"), sel.key("inside_pick_head"))
        return
    captured = _captured_or_message(active, result, reference)
    if captured is None:
        return
    q_tokens, k_tokens = captured.tokens(kind)
    n_rows = result.trace.axis_sizes(kind)[0]
    if row is None:
        labels = result.trace.labels(kind)[0]
        key = f"{page}_inside_query"  # in the link as `query` (1-based)
        asked = st.session_state.get(key)
        if asked is not None and not 0 <= int(asked) < n_rows:  # from a link, or another input's longer axis
            st.info(f"Query position {int(asked) + 1} is not in this input: its {result.trace.family.title(kind)} "
                    f"has positions 1–{n_rows}. Showing the last.", icon=":material/info:")
            asked = None
        st.session_state[key] = n_rows - 1 if asked is None else int(asked)
        row = st.selectbox("Query", range(n_rows), key=key,
                           format_func=lambda r: f"{r + 1}: {visible_token(labels[r])}")
    try:
        c = computation_at(active.adapter, captured, kind, layer, head, int(row))
    except HeadSelectionError as exc:
        st.warning(str(exc), icon=":material/error:")
        return
    group = "" if c.n_kv_heads == c.n_heads else (f" It reads key/value head {c.kv_head + 1} of {c.n_kv_heads}, "
                                                  "shared with the other query heads of its group (grouped-query "
                                                  "attention).")
    st.markdown(f"**{_what(active)} · {result.trace.family.title(kind)} · layer {layer + 1} · head {head + 1} · "
                f"query {c.query + 1} ({visible_token(q_tokens[c.query])})** · scale {c.scale:.4g}.{group}")
    window = stage_key_window(c.n_keys, c.query)
    if c.n_keys > KEY_WINDOW:
        first = st.slider("Keys shown", 1, c.n_keys - KEY_WINDOW + 1, window[0] + 1, key=f"{page}_inside_keys",
                          help=f"Long inputs show {KEY_WINDOW} keys at a time; vectors show their 16 largest "
                               "dimensions.")
        window = (first - 1, first - 1 + KEY_WINDOW)
    charts = stage_charts(c, k_tokens, window)
    order = ["query_unrotated", "keys_unrotated", "query", "keys", "products", "dots",
             *(n for n in charts if n.startswith("term:")), "scores", "weights", "values", "weighted_values",
             "head_output", "share", "contributions"]
    for name in (n for n in order if n in charts):
        chart_col, formula_col = st.columns([3, 1], vertical_alignment="center")
        with chart_col:
            show_chart(charts[name], key=f"{page}_inside_{name}", width="content")
        with formula_col:
            if name in STAGES:
                st.latex(STAGES[name][1])
            elif name.startswith("term:"):
                st.caption("Added to the score as the model adds it (−∞: a key this query may not see; T5's "
                           "position bias: a learned number per relative distance).")
            else:
                st.caption("RoPE rotates each pair of dimensions by an angle that grows with the position.")


def show_step_inside(sel: Selection) -> None:
    """Decode: the selected head's computation at the selected step (the step's query; the encoder's query is
    picked)."""
    result, t = sel.result, sel.at
    with st.expander("Inside one head at this step: how its weights are computed", key=INSIDE_OPEN_KEY,
                     on_change="rerun", icon=":material/calculate:") as box:
        if not box.open:  # captured and drawn only while open
            return
        family = result.trace.family
        kind = st.radio("Attention", family.kinds, format_func=family.title, key=INSIDE_KIND_KEY,
                        horizontal=True, index=family.kinds.index(family.cross_kind or family.output_kind))
        row = None if kind == family.encoder_kind else result.trace.step_offset + t
        show_head_computation(sel, kind=kind, row=row)


def show_attention_inside(sel: Selection) -> None:
    """Attention: the selected head's computation for a query picked here (a link with `query` opens it there); at
    a document's length, the picked row's (recomputed from the store)."""
    if not attention_source(sel.result.trace).holds_maps:
        show_row_inside(sel)
        return
    if st.session_state.get(sel.param_key("query")) is not None:
        st.session_state.setdefault(sel.key("inside_open"), True)
    with st.expander("Inside this head: how its weights are computed", key=sel.key("inside_open"),
                     on_change="rerun", icon=":material/calculate:") as box:
        if box.open:  # captured and drawn only while open
            show_head_computation(sel)


def show_step_contribution(sel: Selection, row: int) -> None:
    """Decode: beside the step's weight map, on request, the contribution map of the same head, rows up to the step
    (the trace's `row`)."""
    active, result, reference, kind, layer, head = (sel.model, sel.result, sel.reference, sel.kind, sel.layer,
                                                    sel.head)
    st.session_state.setdefault(sel.key("contribution"), False)
    if not st.toggle("Also show what each key adds to the output", key=sel.key("contribution"),
                     help="A key can get a large weight and still add little: this map shows how much each key "
                          "actually adds to the head's output, ‖α_ij · W_O^h v_j‖ (the weight times the size of its "
                          "projected value; Kobayashi et al. 2020). For the mean of heads: the size of the mean of "
                          "the heads' vectors."):
        return
    head = None if head is None or head < 0 else head  # the mean of heads
    captured = _captured_or_message(active, result, reference)
    if captured is None:
        return
    matrix = _contribution(_decode_key(active, result, reference), active, captured, kind, layer, head)[: row + 1]
    queries, keys = result.trace.labels(kind)
    who = "mean of heads" if head is None or head < 0 else f"head {head + 1}"
    title = f"{result.trace.family.title(kind)} · layer {layer + 1} · {who} · contribution · rows up to this step"
    show_chart(cached_chart(contribution_heatmap, matrix, queries[: row + 1], keys, title,
                            stage_key_window(len(keys), None, 60)),
               key=sel.key("contribution_map"), width="content")


TOP_KEYS, ROW_PX = 10, 600  # keys in a document row's table; its charts' width
COLUMN_FORMULAS = {"value size": "‖W_O v_j‖: the length of key j's value vector through the head's output projection",
                   "what it adds": "‖α_j · W_O v_j‖: the value size times the key's weight α_j, what key j adds to "
                                   "the head's output at this row (Kobayashi et al. 2020)"}


def show_row_inside(sel: Selection) -> None:
    """Inside one head for the picked row at a document's length: the top keys' q . k, score, weight, value norm and
    contribution, and every key's contribution as a strip (q . k for this row only, never an n x n map)."""
    source, labels = attention_source(sel.result.trace), list(sel.result.trace.decoder_input_tokens)
    layer, head = sel.layer, sel.head if sel.head is not None else 0
    query = sel.row if sel.row is not None else source.shape("self")[2] - 1
    row = head_row(source, "self", layer, head, query)
    if row.dots is None or row.scores is None or row.scale is None or row.lse is None:
        return
    dots, scores, norms = row.dots, row.scores, row.value_norms
    st.markdown(f"**Inside one head**: L{layer + 1} H{head + 1}, query row {query:,} "
                f"(`{labels[query] if query < len(labels) else '?'}`) against all {row.n_keys:,} keys")
    frame = pd.DataFrame([{"key": j, "token": labels[j] if j < len(labels) else "?", "q·k": float(dots[j]),
                           "score": float(scores[j]), "weight α": w, "value size": None if norms is None else
                           float(norms[j]), "what it adds": c} for j, w, c in row.top(TOP_KEYS)])
    st.dataframe(frame, hide_index=True, width=ROW_PX, column_config={
        c: st.column_config.NumberColumn(format="%.4g", help=COLUMN_FORMULAS.get(c)) for c in frame.columns[2:]})
    st.caption(f"score = {row.scale:.4g} · q·k (with the model's rules: causal mask"
               f"{', window' if row.window else ''}), α = exp(score − {row.lse:.4f}) "
               f"(the row's log-sum-exp); key/value head {row.kv_head + 1}. Recomputed from the store: q·k for this "
               "row only, never an n × n map.")
    if row.contributions is None:
        return
    strip, top = row_strip_frames(row.contributions, pool_row(row.contributions), labels)
    show_chart(row_strip_chart(strip, top, row.n_keys, f"What each of the {row.n_keys:,} keys adds to row {query:,} "
                               f"(max per bin, scaled to the largest, {float(row.contributions.max()):.3g})",
                               width=ROW_PX, measure="contribution", color="#e6550d"), width="content")
    named = ", ".join(f"{j:,} `{labels[j] if j < len(labels) else '?'}` {c:.3g}"
                      for j, _, c in row.top(5, by="contribution"))
    st.caption(f"Top contributions of row {query:,}: {named}")
