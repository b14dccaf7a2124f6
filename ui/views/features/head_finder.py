"""Find heads (docs/finding-heads.md): every head of every kind as a point of a scatter whose axes and colour are
picked from the corpus statistics and the long-range scores, a click opening that head's page; the same heads as a
sortable table. Drawn from the statistics computed for the model in this session."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer.analysis import (
    ESTIMATE_SENTENCES,
    FINDER_COLUMNS,
    LENGTH,
    NOMINAL,
    CorpusEstimate,
    CorpusStats,
    corpus_estimate,
    finder_table,
    head_finder_frame,
    long_range_heads,
)
from transformer.charts import FINDER_SELECTION, head_finder_chart
from transformer.decode import InputError
from transformer.model import Head
from ui.models import ActiveModel

from ..kit import (
    JobTexts,
    analysis_result,
    can_start,
    latest_snapshot_curves,
    open_head_page,
    show_chart,
    start_button,
)

LONG_RANGE_KEY = "finder_long_range"  # ((model cache key, length), LongRange): the detectors last run
# (model cache key, first sentences, their references or None, CorpusEstimate or None): the ablation estimate the
# finder drew last (its `estimate` column), for the head page to show the same number
ESTIMATE_KEY = "finder_estimate_latest"
ESTIMATE_TEXTS = JobTexts(cancelled="Estimate cancelled: nothing was kept.", cancelled_icon=":material/stop_circle:",
                          refused="Cannot estimate: {error}", refused_icon=":material/block:")
Corpus = tuple[tuple[str, ...], tuple[str, ...] | None]  # the statistics' sentences, their references or None
CHOICES = [*FINDER_COLUMNS, *NOMINAL]


def latest_estimate() -> tuple | None:
    """(model cache key, first sentences, their references or None, CorpusEstimate or None): the ablation estimate
    the finder drew last, None before any (a head's page shows the same number)."""
    return st.session_state.get(ESTIMATE_KEY)


def clicked_head(key: str) -> Head | None:
    """The head a click on the finder (its chart's `key`) picked, if any."""
    picked = ((st.session_state.get(key) or {}).get("selection") or {}).get(FINDER_SELECTION) or []
    label = picked[0].get("label") if picked and isinstance(picked[0], dict) else None
    return Head.parse(label) if label else None


def _detector_length(active: ActiveModel, key: str) -> int:
    """The long-range detectors' length in tokens, picked up to the model's decoder positions (a model without a
    causal kind reads its synthetic sources at their own length: the default)."""
    if active.family.decoder_kind is None:
        return LENGTH
    most = max(active.adapter.max_target_len, 32)
    st.session_state.setdefault(f"{key}_long_range_length", min(LENGTH, most))
    return int(st.number_input("Long-range detectors' length (tokens)", min_value=32, max_value=most, step=512,
                               key=f"{key}_long_range_length",
                               help="The needle-in-a-haystack inputs are this long and half as long (the retrieval "
                                    f"score), as `heads --long-range --length N`; up to the model's {most:,} "
                                    "positions. Inputs over 1,024 tokens are read through the attention store."))


def _long_range(active: ActiveModel, key: str):
    """The long-range detectors' result for this model at the length picked: kept, or run once its button was
    clicked (None before). The click is kept as a flag by the button's callback: the page may rerun before it gets
    here (the frame's rerun in `ensure_frame`), and a plain button's click would be lost to that rerun."""
    length = _detector_length(active, key)
    wanted = (active.cache_key, length)
    kept = st.session_state.get(LONG_RANGE_KEY)
    if kept is not None and kept[0] == wanted:
        return kept[1]
    flag = f"{key}_long_range_requested"
    if st.session_state.pop(flag, None) == active.cache_key:
        try:
            with st.spinner(f"Reading synthetic inputs of up to {length:,} tokens…"):
                found = long_range_heads(active.adapter, length)
        except InputError as exc:  # too few positions or ordinary tokens for the synthetic inputs
            st.warning(f"Cannot run the long-range detectors: {exc}.", icon=":material/block:")
            return None
        st.session_state[LONG_RANGE_KEY] = (wanted, found)
        return found  # drawn without the button
    st.button(f"Run the long-range detectors at {length:,} tokens", key=f"{key}_long_range", icon=":material/radar:",
              on_click=_request_long_range, args=(flag, active.cache_key),
              help="Induction and retrieval scores of the causal self-attention's heads (needle-in-a-haystack "
                   "inputs) and every head's pattern label, from synthetic inputs: no text needed.")
    return None


def _request_long_range(flag: str, model: object) -> None:
    """on_click of "Run the long-range detectors": remember which model they were asked for."""
    st.session_state[flag] = model


def _estimate(active: ActiveModel, corpus: Corpus | None, key: str) -> tuple[CorpusEstimate | None, str]:
    """The one-pass ablation estimate (`heads --estimate`'s) averaged per head over the statistics' first N
    sentences (N picked): kept, or computed in the background on the button's click; else None and why it is n/a."""
    if not active.family.decodes:
        return None, "the ablation estimate is n/a: an encoder-only model writes no output to estimate against."
    if corpus is None or not corpus[0]:
        return None, "the ablation estimate is n/a until the statistics' sentences are known (compute them above)."
    sources, refs = corpus
    st.session_state.setdefault(f"{key}_estimate_n", min(ESTIMATE_SENTENCES, len(sources)))
    n = int(st.number_input("Sentences for the ablation estimate (the statistics' first)", min_value=1,
                            max_value=len(sources), step=10, key=f"{key}_estimate_n",
                            help="The estimate column is each head's one-pass estimate (attribution patching, "
                                 "`heads --estimate`), averaged over the first N sentences of the corpus the "
                                 "statistics read, each on the output they read it with."))
    first, first_refs = sources[:n], None if refs is None else refs[:n]
    identity = ("finder-estimate", active.cache_key, first, first_refs)
    adapter = active.adapter

    def run(progress) -> CorpusEstimate:
        return corpus_estimate(adapter, first, first_refs, n=n, progress=progress)

    found = analysis_result(identity, f"Estimating every head's effect over {n:,} sentences", run,
                            key=f"{key}_estimate", texts=ESTIMATE_TEXTS)
    st.session_state[ESTIMATE_KEY] = (active.cache_key, first, first_refs, found)  # the head page shows the same
    if found is not None:
        return found, f"estimate: the one-pass ablation estimate, {found.caption()}."
    if can_start(identity):
        start_button(f"Estimate each head's effect over the first {n:,} sentences", identity, key=f"{key}_estimate",
                     icon=":material/bolt:", help="Attribution patching (`heads --estimate`): per sentence one "
                     "forward and one backward estimate how much less likely its output becomes with each head "
                     "switched off; the column is the mean over the sentences.")
    return None, f"the ablation estimate is n/a until estimated over the first {n:,} sentences (the button above)."


def _over_training(active: ActiveModel, frame: pd.DataFrame, key: str) -> tuple[pd.DataFrame, str]:
    """For a run whose statistics were computed over its weight snapshots: a slider over the steps, the statistics'
    columns taken at the step picked (the others stay the final model's), and a note saying which step."""
    curves = latest_snapshot_curves(active)
    if curves is None:
        return frame, ""
    steps = list(curves["steps"])
    if st.session_state.get(f"{key}_step") not in steps:
        st.session_state[f"{key}_step"] = steps[-1]
    step = st.select_slider("Over training: the weight snapshot at step", steps, key=f"{key}_step",
                            format_func=lambda s: f"{s:,}",
                            help="The corpus statistics over each weight snapshot of the run (Over training, "
                                 "above): the points move with the step.")
    at = steps.index(step)
    heads = {(h["kind"], h["layer"], h["head"]): h for h in curves["heads"]}
    moved = frame.copy()
    rows = list(zip(frame["kind"], frame["layer"], frame["head"], strict=True))
    for name in curves["statistics"]:
        if name in moved:
            moved[name] = [heads[r][name][at] if r in heads else float("nan") for r in rows]
    return moved, f" Statistics at step {step:,} (weight snapshot {at + 1} of {len(steps)})."


def show_head_finder(active: ActiveModel, stats: CorpusStats, *, key: str, corpus: Corpus | None = None) -> None:
    """The finder's scatter (a click opens that head's page) and table for the statistics `stats`; `corpus`: the
    sentences they read (and their references), for the ablation estimate over the first of them."""
    found = _long_range(active, key)
    estimate, estimate_note = _estimate(active, corpus, key)
    frame, step_note = _over_training(active, head_finder_frame(
        stats, estimate=None if estimate is None else estimate.frame, long_range=found), key)
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
    n_a = " Induction, retrieval and the pattern: run the long-range detectors." if found is None else (
        f" The long-range detectors read {found.length:,}-token inputs" + (
            f" (copy rate {found.retrieval['copy_rate']:.2f})." if found.retrieval else ".") if found.length else "")
    st.caption(f"A point a head; a click opens its page. Induction and retrieval apply to causal self-attention "
               f"only (n/a elsewhere); {estimate_note}{n_a}{step_note}")
    st.dataframe(finder_table(frame, sort=y if y not in NOMINAL else "max_weight"), hide_index=True,
                 key=f"{key}_table", height=260, column_config={
                     name: st.column_config.NumberColumn(_header(name, estimate), format="%.3f", help=what)
                     for name, what in FINDER_COLUMNS.items()})


def _header(name: str, estimate: CorpusEstimate | None) -> str:
    """A table column's header: the estimate's says over how many sentences."""
    if name != "estimate" or estimate is None:
        return name
    return f"estimate ({estimate.sentences:,} sentence{'s' * (estimate.sentences != 1)})"
