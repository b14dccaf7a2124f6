"""The logit lens on the Decode page: what each decoder layer would predict at the current step, the
layers x steps grid of the chosen token's rank (a click goes to that step and layer), and the DecoderLens switch
(an encoder-decoder's decoder reading an earlier encoder layer). docs/lens-and-beams.md explains how to read it."""
from __future__ import annotations

from typing import Sequence

import streamlit as st

from transformer.analysis import LENS_TOP_K, LensError, StepLens, every_step_lens, lens_grid
from transformer.charts import clicked_lens_cell, grid_window, lens_grid_chart, step_lens_frame
from transformer.decode import InputError, Sampling, greedy_decode, teacher_forced
from ui.models import ActiveModel
from ui.server import shared

from ..kit import LINK_OPENS, LINK_PARAMS, Selection, chart_heading, md_token, show_chart
from ..kit import decode_state as ds

LENS_OPEN_KEY = LINK_OPENS["decode"]["enc_layer"]
ENCODER_LAYER_KEY = LINK_PARAMS["decode"]["enc_layer"]  # the DecoderLens picker, in the link
GRID_KEY = "decode_lens_grid"
DOCUMENT_PX = 600  # a document's lens grid at most this wide


@shared
def _lenses(model_key: str, _active: ActiveModel, text: str, top_k: int, forced: tuple[str, ...],
            encoder_layer: int | None, sampling: tuple | None = None
            ) -> tuple[tuple[StepLens, ...], tuple[str, ...], str]:
    """Every step's lens of the decode (recording its residuals; a sample's with its settings and seed), its output
    tokens and text; small, so cached."""
    adapter = _active.adapter
    result = greedy_decode(adapter, text, top_k=top_k, forced=forced, residuals=True, encoder_layer=encoder_layer,
                           sampling=None if sampling is None else Sampling(*sampling))
    return every_step_lens(adapter, result), result.output_tokens, result.output_text


@shared
def _teacher_lenses(model_key: str, _active: ActiveModel, text: str, reference: str, top_k: int
                    ) -> tuple[tuple[StepLens, ...], tuple[str, ...], str]:
    """Every position's lens of the teacher-forced pass on `reference` (its insides: one pass)."""
    adapter = _active.adapter
    result = teacher_forced(adapter, text, reference, top_k=top_k, residuals=True)
    return every_step_lens(adapter, result), result.output_tokens, result.output_text


def lenses(active: ActiveModel, text: str, top_k: int, forced: Sequence[str] = (), encoder_layer: int | None = None,
           sampling: Sampling | None = None) -> tuple[tuple[StepLens, ...], tuple[str, ...], str]:
    """`_lenses` with a spinner: every step's lens, the output tokens, the output text."""
    settings = None if sampling is None else (sampling.temperature, sampling.top_k, sampling.top_p, sampling.seed)
    with st.spinner(f"Reading every layer of {active.option.name}…", show_time=True):
        return _lenses(active.cache_key, active, text, int(top_k), tuple(forced), encoder_layer, settings)


def go_to_cell() -> None:
    """on_select of the grid: the clicked cell's step becomes the current step, its layer the decoder layer shown
    (the embeddings row moves the step only)."""
    cell = clicked_lens_cell(st.session_state.get(GRID_KEY))
    if cell is None:
        return
    layer, step = cell
    ds.show_step(step, layer - 1 if layer >= 1 else None)


def _encoder_layer(active: ActiveModel) -> int | None:
    """The DecoderLens picker (encoder-decoders): the encoder layer the decoder reads; None for its own output (the
    default, which stays out of the link: `enc_layer` names an earlier layer)."""
    family = active.family
    if family.encoder_kind is None or family.decoder_kind is None:
        return None
    n = active.adapter.head_counts()[family.encoder_kind][0]
    options = [None, *range(n - 1, -1, -1)]
    if st.session_state.get(ENCODER_LAYER_KEY) not in options:
        st.session_state[ENCODER_LAYER_KEY] = None
    names = {None: f"the encoder's output (layer {n})", 0: "the embeddings (layer 0)"}
    return st.selectbox("The decoder reads", options, key=ENCODER_LAYER_KEY,
                        format_func=lambda i: names.get(i, f"encoder layer {i}"),
                        help="DecoderLens (Langedijk et al. 2023): the decoder reads an earlier encoder layer, "
                             "through the encoder's final norm, instead of the last. Where the output stops "
                             "changing, the source has been understood.")


def show_step_lens(sel: Selection) -> None:
    """The expander "What each layer predicts": the lens at the step shown (`sel.step` of the output `sel.mode`) and
    the grid; computed only while open."""
    active, text, result, view, t = sel.model, sel.text, sel.result, sel.mode, sel.at
    with st.expander("What each layer predicts (logit lens)", key=LENS_OPEN_KEY, on_change="rerun",
                     icon=":material/layers:") as expander:
        if not expander.open:
            return
        forced = ds.forced_prefix(active.task_name, text)
        encoder_layer = None if view == ds.TEACHER else _encoder_layer(active)
        try:
            if view == ds.TEACHER:  # the reference fed: each position's prediction, through one insides pass
                with st.spinner(f"Reading every layer of {active.option.name}…", show_time=True):
                    steps, tokens, output = _teacher_lenses(active.cache_key, active, text,
                                                            sel.reference or "", LENS_TOP_K)
            else:
                steps, tokens, output = lenses(active, text, LENS_TOP_K,
                                               forced.tokens if view == ds.FORCED and forced else (), encoder_layer,
                                               result.sampling)
        except (InputError, LensError) as exc:
            st.warning(str(exc), icon=":material/edit_note:")
            return
        if encoder_layer is not None:
            st.markdown(f"Reading encoder layer {encoder_layer}, the decoder writes: **{md_token(output) or '∅'}** "
                        f"({len(tokens)} tokens). The lens below is that decode's.")
        elif tokens != result.output_tokens:  # the same decode, recorded: never expected
            st.warning("The recorded decode differs from the one shown; the lens below is the recorded one's.")
        if t >= len(steps):
            st.caption(f"This decode has {len(steps)} steps: step {t + 1} has no lens.")
            return
        lens = steps[t]
        chart_heading(f"What each layer of {active.option.name} predicts at step {t + 1} of {len(steps)} "
                      f"(chosen: ‹{md_token(lens.token)}›)")
        st.dataframe(step_lens_frame(lens), hide_index=True, width="stretch",
                     column_config={"its probability": st.column_config.NumberColumn(format="%.3f"),
                                    "entropy (nats)": st.column_config.NumberColumn(format="%.2f"),
                                    "KL(final ‖ layer) (nats)": st.column_config.NumberColumn(  # fits 1280 px
                                        "KL to final (nats)", format="%.2f",
                                        help="KL(final ‖ layer): how far this layer's guess is from the model's own "
                                             "distribution, in nats (0 at the last layer)")})
        st.caption(f"Each layer's residual stream through the model's own final norm and output projection, over "
                   f"the {lens.n_emittable:,} tokens this step could emit. The last layer's row is the model's own "
                   "distribution.")
        first, last = grid_window(len(steps), t)
        chart_heading("The chosen token's rank at every layer and step" +
                      ("" if (first, last) == (0, len(steps)) else f" · steps {first + 1}–{last} of {len(steps)}"))
        grid = lens_grid_chart(lens_grid(steps), current=t, first=first, last=last)
        show_chart(grid, key=GRID_KEY, width="content", selection_mode=["lens_cell"], on_select=go_to_cell)
        st.caption("Dark: the layer already ranks the chosen token first. Click a cell to go to that step and "
                   "layer.")


def show_lens_at_steps(sel: Selection) -> None:
    """A document's logit lens at its decode steps: each layer's rank of the token each step chose (its decode kept
    the residual stream at the steps' positions only)."""
    st.markdown("**Logit lens at the decode steps**")
    try:
        grid = lens_grid(every_step_lens(sel.model.adapter, sel.result))
    except LensError as exc:
        st.info(str(exc), icon=":material/layers:")
        return
    show_chart(lens_grid_chart(grid, max_width=DOCUMENT_PX), width="content")
    st.caption(f"Each layer's lens at the {len(grid.tokens)} decode steps: the rank of the token the step chose "
               "(dark: rank 1). Only the steps' positions are read through the output head.")
