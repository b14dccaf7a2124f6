"""Attribution beside attention: the strip of one step (Decode) and the attention/attribution agreement (Attention)."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import streamlit as st

from transformer.adapters import InspectableModel
from transformer.analysis import (
    IG_STEPS,
    METHOD_TITLES,
    METHODS,
    Attribution,
    Progress,
    agreement_frames,
    agreement_summary,
    attribute_in_chunks,
    attribute_step,
)
from transformer.charts import agreement_chart, decoder_row_chart, source_strip
from transformer.decode import AttentionTrace, InputError
from transformer.model import SOURCE
from ui.models import ActiveModel
from ui.server import refuse, shared

from ..kit import (
    PAGE_PX,
    JobTexts,
    Selection,
    analysis_result,
    chart_heading,
    md_token,
    show_chart,
    slide_downloads,
    slide_title,
)

EXPLAIN_METHODS = (
    f"The score explained is the log-probability of the chosen token. **Integrated Gradients**: the gradient "
    f"averaged along the straight path from a baseline where every token embedding is zero (positions kept) to the "
    f"real embeddings, {IG_STEPS} points, times the difference; the attributions add up to the score minus the "
    "baseline's score. **Gradient × input**: one gradient, a local first-order estimate. Shown is each token's "
    "share of the total |attribution|, so the strip reads like an attention row.")
EXPLAIN_AGREEMENT = (
    "For each output step, a head's cross-attention row is compared with the source tokens' |attribution| (Integrated"
    " Gradients or gradient × input) of the token chosen there: **Spearman** rank correlation (1: the head ranks the "
    "source tokens exactly as attribution does, 0: unrelated, negative: opposite) and **top-1 match** (the token the "
    "head looks at most is the one the output depends on most), averaged over steps. Attention shows where a head "
    "*reads*; attribution shows what the output *depends on*. They differ when a head reads a token whose value "
    "carries little (attention to `</s>` is a common 'no-op'), when other heads or layers supply the information, or "
    "when the encoder has already moved a token's content to another position, so the attended position is not the "
    "source of the information. Decoder self-attention is compared the same way with the attribution to the decoder "
    "inputs (the start token and the earlier outputs), from step 2 on (step 1 sees only the start token).")
AGREEMENT_TEXTS = JobTexts(
    cancelled="Attribution cancelled: nothing was kept. Switch the method, or the toggle off and on, to compute it "
    "again.", cancelled_icon=":material/stop_circle:", refused="Cannot compare for this input: {error}",
    refused_icon=":material/block:", refusals=(InputError, ValueError))
AGREEMENT_TITLES = {"cross": "Cross-attention vs attribution to the source tokens",
                    "decoder_self": "Decoder self-attention vs attribution to the decoder inputs",
                    "self": "Self-attention vs attribution to the prompt and the earlier outputs"}


def attributed_tokens(trace: AttentionTrace, attr: Attribution, t: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The tokens of `attr.source` and `attr.target` at step t: the source sentence and the decoder inputs up to the
    step, or (a model whose prompt is the decoder's first input) the prompt and the outputs generated before it."""
    row = trace.step_offset + t
    source = (trace.decoder_input_tokens[: len(attr.source)] if trace.family.prompt_in_decoder
              else trace.source_tokens)
    target = trace.decoder_input_tokens[row + 1 - len(attr.target): row + 1]
    return tuple(source), tuple(target)


@shared(spinner="Computing the attribution…")
def _attribution(model_key: str, _active: ActiveModel, text: str, output: tuple[int, ...], step: int,
                 method: str) -> Attribution:
    return attribute_step(_active.adapter, text, list(output), step, method)


AGREEMENT_METHOD_HELP = (
    "Integrated Gradients is the thorough one (its attributions add up to the score); gradient × input takes one "
    f"gradient per output step instead of {IG_STEPS}, so it is much faster on a large model.")


def _agreement(adapter: InspectableModel, text: str, output: Sequence[int], trace: AttentionTrace, method: str,
               progress: Progress) -> pd.DataFrame:
    """`trace` is the trace of this output (its decoder inputs follow from `output`)."""
    return agreement_frames(trace, attribute_in_chunks(adapter, text, output, method=method, progress=progress))


def _clear_cancelled(flag: str) -> None:
    """on_change of the toggle and the method: a cancelled agreement may be asked for again."""
    st.session_state.pop(flag, None)


def show_step_attribution(sel: Selection, *, key: str) -> None:
    """How much each source token and each earlier decoder input contributed to the token chosen at step `sel.step`
    of the decode shown."""
    active, text, trace, t = sel.model, sel.text, sel.result.trace, sel.at
    output = [s.token_id for s in sel.result.steps]
    method = st.radio("Attribution", METHODS, format_func=METHOD_TITLES.__getitem__, key=sel.param_key("attr"),
                      horizontal=True, help=EXPLAIN_METHODS)
    try:
        attr = _attribution(active.cache_key, active, text, tuple(output), t, method)
    except InputError as exc:
        st.warning(f"No attribution for this step: {exc}", icon=":material/block:")
        return
    source, target = attributed_tokens(trace, attr, t)
    input_name = trace.family.axis_titles[SOURCE].capitalize()
    chart_heading(f"{input_name} shaded by their {METHOD_TITLES[method]} attribution to step {t + 1}'s output")
    strip = source_strip(source, attr.source_share(), max_width=PAGE_PX)
    show_chart(strip, width="content", key=f"{key}_source")
    slide_downloads(strip, slide_title(active, text).lines(f"{input_name} shaded by their {METHOD_TITLES[method]} "
                                                           f"attribution · step {t + 1}"),
                    f"attribution_source_step{t + 1}", f"{key}_source")
    if target:
        chart_heading(f"Decoder inputs up to step {t + 1}, same scale" if not trace.family.prompt_in_decoder
                      else f"Outputs before step {t + 1}, same scale")
        start = trace.step_offset + t + 1 - len(target)  # the strip's layout: the decoder inputs from its first token
        show_chart(decoder_row_chart(target, attr.target_share(), max_width=PAGE_PX,
                                     all_tokens=trace.decoder_input_tokens[start:]), width="content",
                   key=f"{key}_target")
    top = int(attr.source.abs().argmax())
    total = float(attr.source.sum() + attr.target.sum())
    st.caption(f"log p = {attr.score:.3f}; attributions sum to {total:.3f}"
               + (" (= log p minus the zero-embedding baseline's log p, up to the integral's error)"
                  if method == "integrated_gradients" else "")
               + f"; strongest input token ‹{md_token(source[top])}› (signed "
               f"{float(attr.source[top]):+.3f}).")


def show_agreement(active: ActiveModel, text: str, output: Sequence[int], trace: AttentionTrace, *, key: str,
                   merged: bool = False) -> None:
    """Per cross-attention and decoder self-attention head: Spearman and top-1 agreement of its rows with the
    attribution rows (source tokens; decoder inputs). `trace` is per token (the attribution's pieces); `merged`
    says the page above shows words, so the figures are said to be per piece."""
    st.caption(EXPLAIN_AGREEMENT)
    if merged:
        st.caption("Computed per subword piece, as the attribution is, while the maps above show merged words.")
    flag = f"{key}_cancelled"
    if refuse("agreement"):  # an audience session is told why instead of the switch
        return
    if not st.toggle("Compute (attribution of every output step)", key=f"{key}_on",
                     on_change=_clear_cancelled, args=(flag,)):
        return
    method = st.radio("Attribution method", METHODS, format_func=METHOD_TITLES.__getitem__, key=f"{key}_method",
                      horizontal=True, help=AGREEMENT_METHOD_HELP, on_change=_clear_cancelled, args=(flag,))
    identity = ("agreement", active.cache_key, text, tuple(output), method)
    cancelled = st.session_state.get(flag) == identity
    steps = len(output)
    frames = analysis_result(
        identity, f"Attributing {steps} output step{'s' * (steps != 1)} ({METHOD_TITLES[method]})",
        lambda progress: _agreement(active.adapter, text, output, trace, method, progress), key=key,
        texts=AGREEMENT_TEXTS, start=not cancelled, on_cancel=lambda: st.session_state.__setitem__(flag, identity))
    if frames is None:
        if cancelled:
            st.info(AGREEMENT_TEXTS.cancelled, icon=AGREEMENT_TEXTS.cancelled_icon)
        return
    st.caption(f"Attribution: {METHOD_TITLES[method]}.")
    for kind in trace.kinds:
        if kind not in AGREEMENT_TITLES:
            continue  # an encoder's self-attention explains no output step
        title = AGREEMENT_TITLES[kind]
        frame = frames[frames["kind"] == kind].drop(columns="kind")
        st.markdown(f"**{title}**")
        if frame.empty:
            st.caption("The output has a single step: no earlier decoder input to compare with.")
            continue
        left, right = st.columns(2, gap="large")
        with left:
            st.caption("Spearman rank correlation (mean over steps)")
            chart = agreement_chart(frame, "spearman")
            show_chart(chart, key=f"{key}_{kind}_spearman", width="content")
            slide_downloads(chart, slide_title(active, text).lines(f"{title} · Spearman rank correlation"),
                            f"agreement_{kind}_spearman", f"{key}_{kind}_spearman")
        with right:
            st.caption("Top-1 match (share of steps)")
            chart = agreement_chart(frame, "top1")
            show_chart(chart, key=f"{key}_{kind}_top1", width="content")
            slide_downloads(chart, slide_title(active, text).lines(f"{title} · top-1 match"),
                            f"agreement_{kind}_top1", f"{key}_{kind}_top1")
        best = agreement_summary(frame)
        st.caption(f"Best agreement: {best['best_head']} (Spearman {best['spearman']:.3f}, "
                   f"top-1 {best['top1']:.0%}).")
