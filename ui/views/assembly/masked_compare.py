"""Compare for an encoder-only model: two masked inputs through the model picked in the sidebar, or one masked input
through it and a second encoder-only model; each side's predictions at the masks and the same map, and, where both
read the same number of tokens, how far each head's attention moved from A to B."""
from __future__ import annotations

import streamlit as st

from transformer.analysis import attention_change
from transformer.charts import attention_heatmap, head_change_map, prediction_bars
from transformer.decode import FillResult, InputError
from ui.models import ActiveModel

from ..features import show_circuits
from ..kit import (
    LINK_PARAMS,
    Selection,
    bind_text,
    cached_chart,
    head_picker,
    layer_picker,
    md,
    model_text_input,
    share_text,
    show_chart,
    show_chips,
)
from .compare import pick_model_b
from .masked import fill, masking

KEYS = LINK_PARAMS["compare"]  # link parameter -> widget key
WAYS = {"inputs": "Two masked inputs, one model", "models": "One masked input, two models"}


def _side(tag: str, sel: Selection) -> None:
    result = sel.filled
    st.markdown(f"**{tag}** · {md(sel.model.option.name)}")
    show_chips(result.source.tokens, caption="what the model reads")
    for prediction in result.predictions:
        show_chart(cached_chart(prediction_bars, prediction, width=220), width="content")
    if not result.predictions:
        st.caption("No mask in this input: nothing predicted.")
    show_chart(cached_chart(attention_heatmap, result.trace, sel.kind, sel.layer, sel.head, size=300, max_width=560),
               width="content")


def _fill_or_message(active: ActiveModel, text: str, tag: str) -> FillResult | None:
    try:
        return fill(active, text)
    except InputError as exc:
        st.warning(f"{tag}: {exc}", icon=":material/edit_note:")
        return None


def masked_compare_selection(active: ActiveModel) -> Selection | None:
    """The encoder-only Compare page's widget row: the way (two inputs through this model, or one input through it
    and a second encoder-only model), the input(s), model B, each side's forward pass, and the one layer / head
    picker of both maps, as a Selection (A's side; B's as `against`, with the same pickers); None after a message."""
    st.session_state.setdefault(KEYS["way"], "inputs")
    way = st.radio("Compare", list(WAYS), format_func=WAYS.__getitem__, key=KEYS["way"], horizontal=True)
    bind_text(KEYS["text"], active)
    other: ActiveModel | None
    if way == "inputs":
        col_a, col_b = st.columns(2)
        text = model_text_input(col_a, "Input A", key=KEYS["text"], on_change=share_text, args=(KEYS["text"],))
        st.session_state.setdefault(KEYS["text_b"], text)
        text_b = model_text_input(col_b, "Input B", key=KEYS["text_b"])
        other = active
    else:
        col_b, col_text = st.columns([2, 3])
        with col_b:
            other = pick_model_b(active)
        text = model_text_input(col_text, "Input", key=KEYS["text"], on_change=share_text, args=(KEYS["text"],))
        if other is None:
            return None
        if other.family.decodes:
            st.info(f"Model B ({md(other.option.name)}) is a {other.family.name} model: it does not predict at "
                    "masks. Pick another encoder-only model.", icon=":material/info:")
            return None
        text_b = text
    fill_a, fill_b = (_fill_or_message(model, t, tag) for tag, model, t in (("A", active, text), ("B", other, text_b)))
    if fill_a is None or fill_b is None:
        return None
    results = (fill_a, fill_b)
    kind = active.family.output_kind
    n_layers = min(r.trace.n_layers(kind) for r in results)
    n_heads = min(r.trace.n_heads for r in results)
    c_layer, c_head = st.columns(2)
    with c_layer:
        layer = layer_picker("Layer", n_layers, KEYS["layer"])
    with c_head:
        head = head_picker("Head", n_heads, KEYS["head"], trace=results[0].trace, kind=kind)
    b = Selection("compare", other, text_b, fill_b.as_decode(), kind=kind, layer=layer, head=head, fill=fill_b)
    return Selection("compare", active, text, fill_a.as_decode(), kind=kind, layer=layer, head=head, fill=fill_a,
                     against=b)


def show_masked_compare(active: ActiveModel) -> None:
    """The Compare page of an encoder-only model."""
    st.caption(f"{md(active.option.name)} predicts at its mask token {md(masking(active).mask_token)}: compare two "
               "inputs (a word masked here and there, or changed) or the same input through a second encoder-only "
               "model. Rows are queries and columns keys; one layer / head selector drives both maps.")
    sel = masked_compare_selection(active)  # the way, the inputs, model B, both passes, the layer and head
    if sel is None:
        return
    show_masked_sides(sel)
    if sel.against is not None and sel.against.model is active and sel.against.text != sel.text:  # two inputs
        show_circuits(active, sel.text, sel.against.text)


def show_masked_sides(sel: Selection) -> None:
    """Both sides (A: `sel`, B: `sel.against`) with their predictions and the same map, and where both read the
    same number of tokens how far each head's attention moved from A to B."""
    for column, (tag, side) in zip(st.columns(2, gap="large"), (("A", sel), ("B", sel.other)), strict=True):
        with column:
            _side(tag, side)
    a, b, kind = sel.filled.trace, sel.other.filled.trace, sel.kind
    if a.weights(kind).shape == b.weights(kind).shape:
        st.subheader("How far each head's attention moved from A to B", anchor=False)
        show_chart(cached_chart(head_change_map, attention_change(a, b), kind), width="content")
    else:
        st.caption(f"A reads {len(a.source_tokens)} tokens and B {len(b.source_tokens)}: the per-head change needs "
                   "inputs of the same length (mask a token rather than deleting it).")
