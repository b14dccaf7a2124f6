"""Patching (estimate) at a decode step of a document: the document with one edit (the first occurrence of a text
replaced) is the corrupted run, and every head's output and every layer's residual at the step's position is
estimated, to first order, as if copied from the clean run (attribution patching restricted to the step), as a
background job: each run's prefix goes through the fused store path once, the step's token with gradients."""
from __future__ import annotations

from typing import Any

import streamlit as st

from transformer.analysis import HEADS, PatchingEstimate, StepRuns, estimate_patching
from transformer.charts import step_patching_chart
from ui.models import ActiveModel
from ui.server import shared_cache, text_hash

from ..kit import JobTexts, Selection, analysis_result, can_start, show_chart, start_button

CHART_PX = 600
TOP_SITES = 5


def _fed(active: ActiveModel, text: str, output: list[int]) -> tuple[list[int], int]:
    """The sequence fed up to the step (the document's prefix, then the output before it) and its source ids."""
    source = active.adapter.tokenize_source(text)
    return [*active.adapter.decoder_prefix(source), *output], len(source.ids)


def _site(site: str, layer: int, head: int) -> str:
    return f"L{layer + 1}H{head + 1}" if site == HEADS else f"the residual after layer {layer}"


def show_step_patching(sel: Selection) -> None:
    """The edit, the step and the job; then each head's estimate as a layers x heads map, the largest named."""
    active, result, job_key = sel.model, sel.result, sel.key("patch_job")
    st.markdown("**Patching (estimate) at a decode step**")
    left, right, step_col = st.columns([2, 2, 1])
    find = left.text_input("Edit: replace", key=sel.key("patch_find"), placeholder="a word of the document")
    with_ = right.text_input("with", key=sel.key("patch_with"), placeholder="its replacement")
    step = int(step_col.number_input("Step", 1, len(result.steps), 1, key=sel.key("patch_step"))) - 1
    text = result.source_text
    if not find:
        st.caption("The document with one edit (the first occurrence of a text replaced) is the corrupted run: each "
                   "head's output at the step's position is estimated as if copied from the clean run.")
        return
    if find not in text:
        st.info(f"{find!r} is not in the document: pick a text it contains.", icon=":material/find_replace:")
        return
    edited = text.replace(find, with_, 1)
    output = [s.token_id for s in result.steps[:step]]
    token = result.steps[step].token_id
    key = ("step-patching", active.cache_key, text_hash(text), text_hash(edited), step)

    def run(progress: Any) -> PatchingEstimate:
        (clean, n_clean), (corrupted, n_corrupted) = _fed(active, text, output), _fed(active, edited, output)
        runs = StepRuns(tuple(clean), tuple(corrupted), token, n_source=(n_clean, n_corrupted))
        return shared_cache().get(key, lambda: estimate_patching(active.adapter, runs, progress=progress))

    if key in shared_cache():
        found = shared_cache().get(key, lambda: None)
    else:
        if can_start(key):
            start_button(f"Estimate every head at step {step + 1} (both documents through the model once)", key,
                         key=job_key, icon=":material/healing:")
        found = analysis_result(key, f"Patching estimate at step {step + 1}", run, key=job_key, texts=JobTexts())
    if found is None:
        return
    show_chart(step_patching_chart(found.frame, f"Step {step + 1} ({result.steps[step].token!r}): each head's clean "
                                   "output copied into the edited run, estimated", width=CHART_PX))
    top = found.frame.head(TOP_SITES)
    named = ", ".join(f"{_site(r.site, int(r.layer), int(r.head))} {r.estimate:+.3f}" for r in top.itertuples())
    st.caption(f"log p of the step's token: clean {found.clean_metric:.3f}, edited {found.corrupted_metric:.3f} "
               f"(gap {found.gap:+.3f}). Largest estimates: {named}. First order only (attribution patching); the "
               "exact patch of a site needs a run per site: open a window of the document for it.")
