"""A document's one-row views, recomputed from the attention store (no n x n map): the picked query's row summed
over words, sentences, lines or chat turns (the grouping is in the link); Inside one head for that row (q . k
against every key, the scores, their softmax, each key's contribution ||alpha W_O v||); and the logit lens at the
decode steps (the residual stream kept at the steps' positions only)."""
from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from transformer.analysis import (
    WINDOW_TOKENS,
    AttentionSource,
    LensError,
    attention_source,
    every_step_lens,
    head_row,
    lens_grid,
    pool_row,
    refused_features,
)
from transformer.charts import group_bars_chart, lens_grid_chart, row_strip_chart, row_strip_frames
from transformer.decode import (
    GROUPINGS,
    MAX_INPUT_CHARS,
    DecodeResult,
    greedy_decode,
    group_sums,
    segment_groups,
    segment_labels,
)
from ui.models import ActiveModel
from ui.server import shared_cache, text_hash

from ..kit import LINK_PARAMS, TEXT_KEY, JobTexts, analysis_result, can_start, show_chart, start_button

GROUP_KEY = LINK_PARAMS["decode"]["group"]
LENS_JOB_KEY = "long_lens_job"
TOP_GROUPS = 12  # groups named in a grouped row's bars
TOP_KEYS = 10  # keys in Inside one head's table
CHART_PX = 600
GROUP_NAMES = {"token": "tokens (as the tokenizer cut them)", "word": "words", "sentence": "sentences",
               "line": "lines", "turn": "chat turns"}


def show_long_rows(active: ActiveModel, result: DecodeResult, layer: int, head: int, query: int) -> None:
    """The grouped row, Inside one head and the lens at the steps for a document's decode; `layer`, `head` and
    `query` as the document view picked them (0-based)."""
    source = attention_source(result.trace)
    identity = (active.cache_key, text_hash(result.source_text), len(result.steps))
    labels = list(result.trace.decoder_input_tokens)
    show_grouped_row(source, labels, identity, layer, head, query)
    show_inside_row(source, labels, layer, head, query)
    show_step_lens_long(active, result, identity)


def _groups(labels: list[str], identity: tuple, by: str) -> tuple[list[list[int]], list[str]]:
    def group() -> tuple[list[list[int]], list[str]]:
        groups = segment_groups(labels, by)
        return groups, segment_labels(labels, groups)

    return shared_cache().get(("long-groups", *identity, by), group)


def show_grouped_row(source: AttentionSource, labels: list[str], identity: tuple, layer: int, head: int,
                     query: int) -> None:
    """The row's weights summed over each group of tokens, the heaviest groups named."""
    picked: Any = st.selectbox("Group tokens into", list(GROUPINGS), key=GROUP_KEY,
                               format_func=lambda g: GROUP_NAMES.get(g, g),
                               help="Each group's weight is the sum of its tokens' weights (the row still sums to 1).")
    by = str(picked or "token")
    if by == "token":
        return
    groups, names = _groups(labels, identity, by)
    row = source.tile("self", layer, head, [query], slice(None))[0]
    sums = group_sums(row, groups)
    shown = min(TOP_GROUPS, len(groups))
    show_chart(group_bars_chart(sums, names, f"Row {query:,} over {len(groups):,} {GROUP_NAMES[by]}: the {shown} "
                                "heaviest", top=TOP_GROUPS, width=CHART_PX))
    st.caption(f"The {len(groups):,} {GROUP_NAMES[by]} together hold {float(sums.sum()):.4f} of row {query:,}'s "
               f"weight (each the sum of its tokens').")


COLUMN_FORMULAS = {"value size": "‖W_O v_j‖: the length of key j's value vector through the head's output projection",
                   "what it adds": "‖α_j · W_O v_j‖: the value size times the key's weight α_j, what key j adds to "
                                   "the head's output at this row (Kobayashi et al. 2020)"}


def show_inside_row(source: AttentionSource, labels: list[str], layer: int, head: int, query: int) -> None:
    """Inside one head for one query row: the top keys' q . k, score, weight, value norm and contribution."""
    row = head_row(source, "self", layer, head, query)
    if row.dots is None or row.scores is None or row.scale is None or row.lse is None:
        return  # a short input's maps: Inside one head reads its insides (head_computation) on the page itself
    dots, scores, norms = row.dots, row.scores, row.value_norms
    st.markdown(f"**Inside one head**: L{layer + 1} H{head + 1}, query row {query:,} "
                f"(`{labels[query] if query < len(labels) else '?'}`) against all {row.n_keys:,} keys")
    top = row.top(TOP_KEYS)
    frame = pd.DataFrame([{"key": j, "token": labels[j] if j < len(labels) else "?", "q·k": float(dots[j]),
                           "score": float(scores[j]), "weight α": w, "value size": None if norms is None else
                           float(norms[j]), "what it adds": c} for j, w, c in top])
    st.dataframe(frame, hide_index=True, width=CHART_PX, column_config={
        c: st.column_config.NumberColumn(format="%.4g", help=COLUMN_FORMULAS.get(c)) for c in frame.columns[2:]})
    st.caption(f"score = {row.scale:.4g} · q·k (with the model's rules: causal mask"
               f"{', window' if row.window else ''}), α = exp(score − {row.lse:.4f}) "
               f"(the row's log-sum-exp); key/value head {row.kv_head + 1}. Recomputed from the store: q·k for this "
               "row only, never an n × n map.")
    if row.contributions is None:
        return
    bins = pool_row(row.contributions)
    strip, top = row_strip_frames(row.contributions, bins, labels)
    show_chart(row_strip_chart(strip, top, row.n_keys, f"What each of the {row.n_keys:,} keys adds to row {query:,} "
                               f"(max per bin, scaled to the largest, {float(row.contributions.max()):.3g})",
                               width=CHART_PX, measure="contribution", color="#e6550d"), width="content")
    named = ", ".join(f"{j:,} `{labels[j] if j < len(labels) else '?'}` {c:.3g}"
                      for j, _, c in row.top(5, by="contribution"))
    st.caption(f"Top contributions of row {query:,}: {named}")


def show_step_lens_long(active: ActiveModel, result: DecodeResult, identity: tuple) -> None:
    """The logit lens at the decode steps: each layer's rank of the token each step chose (the residual stream at
    the steps' positions only; a decode that did not keep it is run again with it, as a background job)."""
    st.markdown("**Logit lens at the decode steps**")
    lensed: DecodeResult | None = result if result.residuals is not None else None
    if lensed is None:
        text, steps = result.source_text, len(result.steps)
        key = ("long-lens", *identity)

        def run(progress: Any) -> DecodeResult:
            progress(0.0)
            return shared_cache().get(key, lambda: greedy_decode(active.adapter, text, max_steps=steps, residuals=True))

        if key in shared_cache():
            lensed = shared_cache().get(key, lambda: None)
        else:
            if can_start(key):
                start_button("Run the lens at the decode steps (the document again, keeping each step's residual "
                             "stream)", key, key=LENS_JOB_KEY, icon=":material/layers:")
            lensed = analysis_result(key, "The lens at the decode steps", run, key=LENS_JOB_KEY, texts=JobTexts())
    if lensed is None:
        return
    try:
        grid = lens_grid(every_step_lens(active.adapter, lensed))
    except LensError as exc:
        st.info(str(exc), icon=":material/layers:")
        return
    show_chart(lens_grid_chart(grid, max_width=CHART_PX), width="content")
    st.caption(f"Each layer's lens at the {len(grid.tokens)} decode steps: the rank of the token the step chose "
               "(dark: rank 1). Only the steps' positions are read through the output head.")


def window_text(active: ActiveModel, labels: list[str], query: int) -> tuple[str, int, int]:
    """The text of the WINDOW_TOKENS tokens of the document ending at row `query` (at most MAX_INPUT_CHARS
    characters, its start cut), and the window's first and last token."""
    first = max(0, query + 1 - WINDOW_TOKENS)
    ids = [active.adapter.token_to_id(t) for t in labels[first: query + 1]]
    text = active.adapter.detokenize([i for i in ids if i is not None])
    return text[-MAX_INPUT_CHARS:].lstrip(), first, query


def _open_window(text: str, on_key: str) -> None:
    state = st.session_state
    state[TEXT_KEY], state[on_key] = text, False  # the input every page shows; the document switched off
    for page in ("decode", "attention"):
        state.pop(LINK_PARAMS[page]["text"], None)  # each page's box takes the shared input again


def show_window_offer(active: ActiveModel, result: DecodeResult, query: int, on_key: str) -> None:
    """What needs every weight or an edited pass, named, with a window of the document (ending at the picked row)
    offered as the page's own input, where every view works (`on_key`: the document switch's key)."""
    labels = list(result.trace.decoder_input_tokens)
    text, first, last = window_text(active, labels, min(query, result.trace.step_offset))  # the document's tokens
    refused = refused_features(attention_source(result.trace))
    st.caption("Not drawn at this length (each reads every weight, or many passes of an edited document): "
               + ", ".join(refused) + ". A window of the document opens as the page's own input, where they and the "
               "views above work with every weight.")
    st.button(f"Open tokens {first:,}–{last:,} as the page's input ({last - first + 1:,} tokens)",
              key="long_window_open", icon=":material/crop:", on_click=_open_window, args=(text, on_key))
