"""Attention explorer: any kind, layer and head (or their mean) for one input, the model view and head statistics."""
from dataclasses import replace

import streamlit as st

from transformer.decode import MAX_INPUT_CHARS, hide_tokens, merge_words
from ui.links import merged_words
from ui.shell import ensure_frame
from ui.views import (
    COMBINE,
    MAP_VALUES,
    MODES,
    attention_ablation,
    attention_result,
    bind_text,
    combine_options,
    current_output,
    head_keys,
    head_picker,
    kind_picker,
    layer_picker,
    md,
    require_model,
    share_text,
    show_agreement,
    masked_attention_result,
    segment_choice,
    show_corpus_statistics,
    show_attention_inside,
    show_line_view,
    show_contribution_map,
    show_large_map,
    show_model_view,
    show_sweep,
    show_weights,
    slide_title,
)

ensure_frame()
active = require_model()
st.title("Attention explorer", anchor=False)
st.caption("Every attention map for one input. Rows are queries and columns keys; tokens are indexed by position, "
           "so repeated tokens stay apart. Maps come from the model in eval mode, on the tokens it actually saw.")
show_weights(active)

bind_text("attention_text", active)
col_text, col_mode = st.columns([3, 2])
text = col_text.text_input(active.family.input_role.capitalize(), key="attention_text", on_change=share_text,
                           args=("attention_text",),
                           max_chars=MAX_INPUT_CHARS)
st.session_state.setdefault("attention_mode", "greedy")
second = ""
if active.family.decodes:
    mode = col_mode.radio("Decoder input", list(MODES), format_func=MODES.__getitem__, key="attention_mode")
    shown = attention_result(active, text, mode)
else:  # an encoder-only model: one forward pass over one sentence or a pair
    mode, shown = "greedy", masked_attention_result(active, text, col_mode, key="attention_pair")
    second = shown[1] if shown is not None else ""
    shown = (shown[0], None) if shown is not None else None
if shown is None:
    st.stop()
result, reference = shown
pieces = result.trace  # `pieces` stays per token: attribution (and so agreement) is per piece
trace = segment_choice(active, text, second, pieces, key="attention_segment")  # a pair's segment filter
if (asked := merged_words()) is not None:  # a shared link's choice
    st.session_state.setdefault("attention_merge_words", asked)
subword = active.level not in ("char", "word")  # merging pieces means nothing for characters or whole words
if subword and st.toggle("Merge subword pieces into words", key="attention_merge_words",
                         help="Keys are summed within a word and queries averaged within a word, so every row still "
                              "sums to 1. A piece starting with ▁ or Ġ (or a special token) starts a word. The trace "
                              "download keeps the pieces."):
    trace = merge_words(trace)
c_hide, c_combine = st.columns([3, 2], vertical_alignment="center")
st.session_state.setdefault("attention_hide_sinks", False)
hide = c_hide.toggle("Hide the first token and special tokens", key="attention_hide_sinks",
                   help="Long inputs and large models pour most attention onto the first token and specials (attention "
                        "sinks). Hidden, they are taken off the key axis and each row is renormalised to sum to 1; "
                        "the map says so, and the trace download records it.")
if hide:
    trace = hide_tokens(trace)
export = replace(result, trace=hide_tokens(result.trace)) if hide else result
st.caption(f"Output: **{md(result.output_text.strip()) or '(empty)'}**" + ("" if result.finished or reference is not None
                                                               else " (stopped at the step limit)"))

c_kind, c_layer, c_head, c_opts = st.columns([5, 2, 2, 2], vertical_alignment="bottom")
with c_kind:
    kind = kind_picker("Attention", "attention_kind", trace)
with c_layer:
    layer = layer_picker("Layer", trace.n_layers(kind), "attention_layer")
with c_head:
    head = head_picker("Head", trace.n_heads, "attention_head", trace=trace, kind=kind)
    head_keys("attention_head", trace.n_heads)
with c_combine:  # beside the sinks switch: the picker row keeps its width at 1400 px
    combines = combine_options(trace, kind)
    if st.session_state.get("attention_combine") not in combines:
        st.session_state["attention_combine"] = "pick"
    combine = st.selectbox("Combine heads", combines, format_func=COMBINE.__getitem__, key="attention_combine",
                           help="Max over heads: each cell's largest weight. Rollout (Abnar & Zuidema 2020): "
                                "attention composed across layers up to this one, with the residual added; for "
                                "cross-attention, the output's attention to the source through the encoder. Mean "
                                "within the key/value group (grouped-query models): the mean of the query heads "
                                "sharing the picked head's keys and values.")
with c_opts:
    st.session_state.setdefault("attention_fixed_scale", True)
    fixed = st.toggle("Fixed scale", key="attention_fixed_scale",
                      help="Colours fixed at 0–1; off: from the map's lowest to its highest weight.")
st.session_state.setdefault("attention_show", "weight")
shows = st.segmented_control("Map shows", list(MAP_VALUES), format_func=MAP_VALUES.__getitem__, key="attention_show",
                             help="Weight: the softmax's α. Contribution: ‖α_ij · W_O^h v_j‖, what each key adds to "
                                  "the head's output (Kobayashi et al. 2020); for the mean of heads, the norm of the "
                                  "mean of the heads' vectors. Max, rollout and group means stay weight-only.")
if shows == "contribution" and combine == "pick":
    show_contribution_map(active, result, reference, kind, layer, head, page="attention")
else:
    if shows == "contribution":
        st.info(f"{COMBINE[combine]} combines weights only: the map shows weights.", icon=":material/info:")
    show_large_map(active, text, export, trace, reference, kind, layer, head, fixed, combine)
show_attention_inside(active, result, reference, kind, layer, head)
show_line_view(trace, kind, layer)

st.subheader("Switch heads off", anchor=False)
ablated_heads = attention_ablation(active, text, result, reference, kind, layer, head, fixed_scale=fixed)

st.subheader("Model view: every layer × head", anchor=False)
show_model_view(trace, kind, fixed, ablated_heads, slide_title(active, text, reference))

if active.family.decodes:
    output = current_output(active, result, reference)
    st.subheader("Which heads matter? Ablate each head in turn", anchor=False)
    show_sweep(active, text, output, reference if reference is not None else result.output_text,
               key="attention_sweep")
    st.subheader("Does attention agree with attribution?", anchor=False)
    show_agreement(active, text, output, pieces, key="attention_agreement", merged=pieces is not trace)
else:  # the sweep and the agreement score an output the model writes; an encoder-only model predicts at masks
    st.caption("An encoder-only model writes no output to sweep or attribute: the predictions at the masks with heads "
               "switched off, and the tokens a prediction leans on, are on the Decode page (Predict at the masks).")
st.subheader("Head statistics over a corpus", anchor=False)
show_corpus_statistics(active, key="attention_corpus")
