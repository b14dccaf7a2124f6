"""Compare: one input through two models, outputs aligned step by step, the same map of both and their difference."""
import streamlit as st

from transformer.decode import MAX_INPUT_CHARS, InputError
from ui.shell import ensure_frame
from ui.views import (
    EDIT,
    bind_text,
    compare_mode,
    compare_kinds,
    greedy,
    greedy_or_message,
    head_keys,
    head_picker,
    kind_picker,
    layer_picker,
    pick_model_b,
    require_model,
    share_text,
    show_both_maps,
    show_difference,
    show_edit_mode,
    show_masked_compare,
    show_outputs,
    step_caption,
    step_picker,
)

ensure_frame()
active = require_model()
st.title("Compare", anchor=False)
if not active.family.decodes:  # an encoder-only model: predictions at the masks (ui/views/masked_compare.py)
    show_masked_compare(active)
    st.stop()
if compare_mode() == EDIT:  # one model, an input and its edit (ui/views/edit_compare.py)
    show_edit_mode(active)  # (no st.stop here: a stopped run does not write its view into the link)
else:
    st.caption("The same input through model A (picked in the sidebar) and model B: two checkpoints of one run, the "
               "live training weights against a saved checkpoint, or a model against itself. Outputs are aligned step "
               "by step and the first divergence is marked; one kind / layer / head selector drives both maps.")

    col_b, col_text = st.columns([2, 3])
    with col_b:
        other = pick_model_b(active)
    bind_text("compare_text", active)
    text = col_text.text_input("Input", key="compare_text", on_change=share_text, args=("compare_text",),
                               max_chars=MAX_INPUT_CHARS)
    if other is None:
        st.stop()
    result_a = greedy_or_message(active, text)
    if result_a is None:
        st.stop()
    try:
        result_b = greedy(other, text)
    except InputError as exc:
        st.warning(f"Model B: {exc}", icon=":material/edit_note:")
        st.stop()

    show_outputs(active, other, result_a, result_b)

    trace_a, trace_b = result_a.trace, result_b.trace
    c_kind, c_step, c_layer, c_head = st.columns([4, 3, 2, 2], vertical_alignment="bottom")
    kinds = compare_kinds((trace_a, trace_b))  # each model's own kind when the families differ
    with c_kind:
        if kinds is None:
            kind = kind_picker("Attention", "compare_kind", trace_a)
            kinds = (kind, kind)
    with c_step:
        t = step_picker(result_a, result_b)
    n_layers = min(trace_a.n_layers(kinds[0]), trace_b.n_layers(kinds[1]))
    n_heads = min(trace_a.n_heads, trace_b.n_heads)
    with c_layer:
        layer = layer_picker("Layer", n_layers, "compare_layer")
    with c_head:
        head = head_picker("Head", n_heads, "compare_head", trace=trace_a, kind=kinds[0])
        head_keys("compare_head", n_heads)
    if (trace_a.n_layers(kinds[0]), trace_a.n_heads) != (trace_b.n_layers(kinds[1]), trace_b.n_heads):
        st.caption(f"The models differ in size: only the {n_layers} layer(s) and {n_heads} head(s) both have are "
                   "offered.")

    st.markdown(step_caption(result_a, result_b, t))
    show_both_maps((active, other), (trace_a, trace_b), kinds, layer, head, t, text)

    if kinds[0] == kinds[1]:
        st.subheader("Difference B − A", anchor=False)
        show_difference((active, other), trace_a, trace_b, kinds[0], layer, head, text)
