"""Another model's row at a decode step, for a document: model B decodes the same document with its own attention
store (a background job), and one decode step's row of each model (the page's layer and head, in each) is read
through each decode's attention source and drawn over every key, with B - A where both models cut the text into the
same tokens (else summed over the picked grouping of tokens, where both give as many groups). No n x n map of either
model is made."""
from __future__ import annotations

from typing import Any

import streamlit as st
import torch

from transformer.adapters import HFModelError
from transformer.analysis import attention_source
from transformer.charts import row_difference_chart, two_rows_chart
from transformer.decode import DecodeResult, InputError, greedy_decode, group_sums, model_context, segment_groups
from transformer.store import CheckpointError
from ui.models import ActiveModel, model_options, resolve
from ui.server import shared_cache, text_hash

from ..kit import JobTexts, Selection, analysis_result, can_start, show_chart, start_button

CHART_PX = 600
TOP_KEYS = 5


def _model_b(active: ActiveModel, key: str) -> ActiveModel | None:
    """Model B as picked (None until picked, or after saying why it cannot be compared)."""
    options = {o.id: o for o in model_options() if o.id != active.option.id}
    if not options:
        st.caption("Compare: no other model to compare with (add one in the models folder, or train one).")
        return None
    chosen = st.selectbox("Compare with model B", list(options), index=None, key=key,
                          format_func=lambda i: options[i].label, placeholder="Pick a model to compare its rows",
                          help="Model B decodes the same document with its own attention store; one step's rows "
                               "of both are drawn over every key.")
    if chosen is None:
        return None
    try:
        b = resolve(options[chosen])
    except (CheckpointError, HFModelError) as exc:
        st.error(f"Cannot load {options[chosen].name}: {exc}", icon=":material/error:")
        return None
    if not b.family.prompt_in_decoder:
        st.info(f"{b.option.name} is not a decoder-only model: its rows at a document's length cannot be kept in a "
                "store. Open a window of the document as the page's input to compare it there.",
                icon=":material/compare_arrows:")
        return None
    return b


def _decode_b(b: ActiveModel, text: str, steps: int, job_key: str) -> DecodeResult | None:
    key = ("model-b-decode", b.cache_key, text_hash(text), steps)

    def run(progress: Any) -> DecodeResult:
        progress(0.0)
        return shared_cache().get(key, lambda: greedy_decode(b.adapter, text, max_steps=steps))

    if key in shared_cache():
        return shared_cache().get(key, lambda: None)
    if can_start(key):
        start_button(f"Decode the document with {b.option.name}", key, key=job_key, icon=":material/compare_arrows:")
    return analysis_result(key, f"Decoding the document with {b.option.name}", run, key=job_key, texts=JobTexts())


def show_model_b_row(sel: Selection) -> None:
    """Model B's picker, its decode of the document, and one step's rows of A and B (the page's grouping of tokens
    used where the two models' tokens differ)."""
    active, result, layer = sel.model, sel.result, sel.layer
    head = sel.head if sel.head is not None else 0
    by = sel.group
    st.markdown("**Compare two models' rows at a decode step**")
    b = _model_b(active, sel.key("model_b"))
    if b is None:
        return
    n_tokens = len(result.trace.decoder_input_tokens)
    if model_context(b.adapter) < n_tokens:
        st.error(f"{b.option.name} reads at most {model_context(b.adapter):,} tokens (its own context); the document "
                 f"has about {n_tokens:,}.", icon=":material/straighten:")
        return
    try:
        other = _decode_b(b, result.source_text, len(result.steps), sel.key("model_b_job"))
    except InputError as exc:
        st.error(str(exc), icon=":material/edit_note:")
        return
    if other is None:
        return
    if attention_source(other.trace).holds_maps:
        st.info(f"{b.option.name} reads the document in at most 1,024 tokens: it is not a long input for it. Compare "
                "it on the Compare page.", icon=":material/compare_arrows:")
        return
    n_steps = min(len(result.steps), len(other.steps))
    step = int(st.number_input("Step", 1, n_steps, 1, key=sel.key("model_b_step"))) - 1
    layers_b, heads_b = b.adapter.head_counts()["self"]
    layer_b, head_b = min(layer, layers_b - 1), min(head, heads_b - 1)
    row_a, row_b = result.trace.step_offset + step, other.trace.step_offset + step
    wa = attention_source(result.trace).tile("self", layer, head, [row_a])[0][: row_a + 1]
    wb = attention_source(other.trace).tile("self", layer_b, head_b, [row_b])[0][: row_b + 1]
    names = (f"A: {active.option.name} L{layer + 1} H{head + 1}", f"B: {b.option.name} L{layer_b + 1} H{head_b + 1}")
    show_chart(two_rows_chart({names[0]: wa, names[1]: wb}, f"Step {step + 1}'s row in each model over its keys "
                              "(max per bin)", width=CHART_PX))
    tokens_a = result.trace.decoder_input_tokens[: row_a + 1]
    tokens_b = other.trace.decoder_input_tokens[: row_b + 1]
    prompt = result.trace.step_offset + 1
    if len(tokens_a) == len(tokens_b) and tokens_a[:prompt] == tokens_b[:prompt]:
        _difference(wb - wa, list(tokens_a), step)
        if tokens_a != tokens_b:
            split = next(i for i, (x, y) in enumerate(zip(tokens_a, tokens_b, strict=True)) if x != y)
            st.caption("The document's tokens are the same in both; the keys after it are each model's own output "
                       f"(they part at the token step {split - prompt + 1} chose).")
        return
    grouping = by if by != "token" else "line"
    groups_a, groups_b = segment_groups(tokens_a, grouping), segment_groups(tokens_b, grouping)
    if len(groups_a) != len(groups_b):
        st.caption(f"The two models cut the text into different tokens ({len(tokens_a):,} and {len(tokens_b):,}) "
                   f"and into {len(groups_a):,} and {len(groups_b):,} {grouping}s: the rows are drawn side by side, "
                   "not subtracted.")
        return
    diff = group_sums(wb, groups_b) - group_sums(wa, groups_a)
    worst = torch.topk(diff.abs(), min(TOP_KEYS, diff.numel())).indices.tolist()
    st.caption(f"The models cut the text into different tokens; summed over {len(groups_a):,} {grouping}s, B − A is "
               "largest at " + ", ".join(f"{grouping} {g + 1:,} ({float(diff[g]):+.3f})" for g in worst) + ".")


def _difference(diff: torch.Tensor, tokens: list[str], step: int) -> None:
    show_chart(row_difference_chart(diff, f"Step {step + 1}: B − A over the same keys (the mean of each bin)",
                                    width=CHART_PX))
    worst = torch.topk(diff.abs(), min(TOP_KEYS, diff.numel())).indices.tolist()
    st.caption("Where the two rows differ most: " + ", ".join(f"{j:,} `{tokens[j]}` {float(diff[j]):+.3f}"
                                                               for j in worst))
