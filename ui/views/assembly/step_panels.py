"""The Decode step-through's panels of one step: the prefix so far with its self-attention, the top-k candidates
(with "force another token"), and the source tokens shaded by the step's attention."""
from __future__ import annotations

import streamlit as st

from transformer.charts import decoder_row_chart, source_strip, topk_bars

from ..kit import (
    PAGE_PX,
    Selection,
    cached_chart,
    chart_heading,
    head_label,
    kind_title,
    show_chart,
    show_chips,
    slide_downloads,
    visible,
)
from ..kit import decode_state as ds


def _at(sel: Selection) -> str:
    """'layer 2 · mean of heads · step 3 of 9': where a slide of this step comes from."""
    return (f"layer {sel.layer + 1} · {head_label(sel.head, spelled=True).lower()} · step {sel.at + 1} of "
            f"{len(sel.result.steps)}")


def show_prefix_panel(sel: Selection, column_px: int | None = None) -> None:
    """The output so far (and, teacher-forced, the reference fed) and the step's self-attention over the prefix,
    its strip wrapped to `column_px` where it is placed in a column narrower than the page."""
    result, t, layer, head = sel.result, sel.at, sel.layer, sel.head
    trace = result.trace
    spec, row = trace.family, trace.step_offset + t  # the query row of step t
    if sel.mode == ds.TEACHER:
        show_chips(trace.decoder_input_tokens, highlight=row, dim_from=row + 1, caption="decoder input: the reference")
    show_chips(result.output_tokens[: t + 1], highlight=t,
               caption="predictions so far" if sel.mode == ds.TEACHER else "output so far")
    self_title = kind_title(spec.output_kind)
    self_row = trace.matrix(spec.output_kind, layer, head)[row, : row + 1].tolist()
    chart_heading(f"{self_title} of step {t + 1} over the prefix")
    width = min(420 if spec.has_cross else PAGE_PX, column_px or PAGE_PX)
    prefix_strip = cached_chart(decoder_row_chart, trace.decoder_input_tokens[: row + 1], self_row,
                                max_width=width, all_tokens=trace.decoder_input_tokens)
    show_chart(prefix_strip, width="content", key="decode_prefix_strip")
    slide_downloads(prefix_strip, sel.title.lines(f"{self_title} over the prefix · {_at(sel)}"),
                    f"{spec.decoder_kind}_prefix_step{t + 1}", "decode_prefix_strip")


def show_topk_panel(sel: Selection) -> None:
    """The step's top-k candidates as bars, and "force another token here" (not on a projector)."""
    result, t = sel.result, sel.at
    step = result.steps[t]
    chart_heading(f"Top-{len(step.top_k)} candidates at step {t + 1}")
    top = cached_chart(topk_bars, step.top_k, chosen=step.token, width=200)
    show_chart(top, key="decode_topk", width="content")
    slide_downloads(top, sel.title.lines(f"Top-{len(step.top_k)} candidates · step {t + 1} of {len(result.steps)}"),
                    f"topk_step{t + 1}", "decode_topk")
    alternatives = [tok for tok, _ in step.top_k if tok != step.token]
    if not alternatives:
        return
    if st.session_state.get(ds.FORCE_CHOICE_KEY) not in alternatives:
        st.session_state[ds.FORCE_CHOICE_KEY] = alternatives[0]
    pick, go = st.columns([1, 1], vertical_alignment="bottom")
    pick.selectbox("Force another token here", alternatives, format_func=visible, key=ds.FORCE_CHOICE_KEY)
    go.button("Decode on", key="decode_force", icon=":material/call_split:", on_click=ds.force_token,
              args=(sel.model.task_name, sel.text, result, t), width="stretch",
              help="Feed this token at this step and let the model decode greedily from there.")


def show_source_panel(sel: Selection) -> None:
    """The source tokens shaded by the step's cross-attention (nothing for a model without a separate source)."""
    trace, t = sel.result.trace, sel.at
    spec = trace.family
    if spec.cross_kind is None:
        return  # no separate source: the prefix strip is the step's whole row, the prompt included
    cross_row = trace.matrix(spec.cross_kind, sel.layer, sel.head)[trace.step_offset + t].tolist()
    chart_heading(f"Source tokens shaded by the attention of step {t + 1} · layer {sel.layer + 1} · "
                  f"{head_label(sel.head, spelled=True).lower()}")
    strip = cached_chart(source_strip, trace.source_tokens, cross_row, max_width=PAGE_PX)
    show_chart(strip, width="content", key="decode_source_strip")
    slide_downloads(strip, sel.title.lines(f"Source tokens shaded by {kind_title(spec.cross_kind).lower()} · "
                                           f"{_at(sel)}"), f"{spec.cross_kind}_source_step{t + 1}",
                    "decode_source_strip")
