"""Decode for an encoder-only model (BERT, RoBERTa, DistilBERT, ModernBERT): no decoding to step through, so the
page predicts at the masks. The user types the model's mask token or clicks tokens to mask them (one or two
sentences), and sees each mask's top-k, how far every head's attention moved when the tokens were masked, one map
with a sentence pair's segment filter, the predictions with heads switched off, and which input tokens the best
prediction leans on (gradient x input)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

import streamlit as st

from transformer.analysis import (
    SEGMENT_FILTERS,
    attention_change,
    head_mask,
    mask_attribution,
    parse_head,
    segment_filter,
)
from transformer.charts import attention_heatmap, head_change_map, prediction_bars
from transformer.decode import (
    AttentionTrace,
    DecodeResult,
    FillResult,
    InputError,
    fill_masks,
    masked_decode,
    no_mask_message,
    read_masked,
)
from transformer.model import Head
from ui.models import ActiveModel
from ui.server import shared

from ..features import chosen_heads
from ..kit import (
    LINK_PARAMS,
    Selection,
    bind_text,
    cached_chart,
    decoding_message,
    head_picker,
    layer_picker,
    md,
    model_text_input,
    share_text,
    show_chart,
    show_chips,
)

KEYS = LINK_PARAMS["decode"]  # link parameter -> widget key (the Decode page's)
POSITIONS_KEY, SEGMENT_KEY = KEYS["masks"], KEYS["segment"]
POSITIONS_FOR_KEY = "decode_mask_positions_for"  # the input the clicked positions belong to


@runtime_checkable
class MaskingModel(Protocol):
    """What an encoder-only adapter has beyond the interface: its mask token and the ids a click never masks."""

    mask_token: str
    special_ids: frozenset[int]


def masking(active: ActiveModel) -> MaskingModel:
    """The active model's adapter as an encoder-only one (these pages are only offered for that family)."""
    adapter = active.adapter
    if not isinstance(adapter, MaskingModel):
        raise TypeError(f"{active.option.name} is not an encoder-only model: it has no mask token")
    return adapter


@shared
def _fill(model_key: str, _active: ActiveModel, text: str, second: str, positions: tuple[int, ...], top_k: int,
          heads: tuple[Head, ...] = ()) -> FillResult:
    adapter = _active.adapter
    return fill_masks(adapter, text, second, mask_positions=positions, top_k=top_k, head_mask=head_mask(adapter, heads))


def fill(active: ActiveModel, text: str, second: str = "", positions: Sequence[int] = (), top_k: int = 5,
         heads: Sequence[Head] = ()) -> FillResult:
    """The predictions at the masks, cached per weights and input; raises InputError for input it cannot read."""
    with st.spinner(decoding_message(active), show_time=True):
        return _fill(active.cache_key, active, text, second, tuple(sorted(positions)), int(top_k), tuple(heads))


def _mask_picker(active: ActiveModel, text: str, second: str) -> tuple[int, ...] | None:
    """The tokens the user clicked to mask (positions among the tokens the model reads); None after a message."""
    adapter = active.adapter
    try:
        source, _, _ = read_masked(adapter, text, second)
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None
    state, mask = st.session_state, masking(active)
    special = set(mask.special_ids)
    options = [i for i, t in enumerate(source.ids) if t not in special]
    if POSITIONS_FOR_KEY in state and state[POSITIONS_FOR_KEY] != (text, second):  # a new input: its own clicks
        state[POSITIONS_KEY] = []
    state[POSITIONS_FOR_KEY] = (text, second)
    state[POSITIONS_KEY] = [i for i in state.get(POSITIONS_KEY) or [] if i in options]  # a link's, checked
    chosen = st.pills("Click tokens to mask them", options, selection_mode="multi", key=POSITIONS_KEY,
                      format_func=lambda i: f"{source.tokens[i]}", help="Each clicked token is replaced by "
                      f"{mask.mask_token} and the model predicts it from the rest; or type {mask.mask_token} in "
                      "the text.")
    return tuple(int(i) for i in chosen or ())


def masked_selection(active: ActiveModel) -> Selection | None:
    """The encoder-only Decode page's input row (sentence A, the optional sentence B, top-k) and the tokens clicked to
    mask, with the one forward pass, as a Selection (`fill`, and as the decode the other views read, `result`); None
    after a message. The map's row (layer, head, a pair's segment) and the heads switched off are drawn under their
    own headings further down: `map_selection` and `_show_ablation` complete the record there."""
    bind_text(KEYS["text"], active)
    st.session_state.setdefault(KEYS["topk"], 5)
    col_text, col_pair, col_k = st.columns([5, 4, 1])
    text = model_text_input(col_text, "Text (sentence A)", key=KEYS["text"], on_change=share_text, args=(KEYS["text"],))
    second = model_text_input(col_pair, "Second sentence (B, optional)", key=KEYS["pair"],
                              help="A sentence pair: [CLS] A [SEP] B [SEP]; the map's segment filter shows "
                                   "A→A, B→B, A→B and B→A.")
    top_k = int(col_k.number_input("Top-k", min_value=1, max_value=20, step=1, key=KEYS["topk"]))
    positions = _mask_picker(active, text, second)
    if positions is None:
        return None
    try:
        result = fill(active, text, second, positions, top_k)
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None
    return Selection("decode", active, text, result.as_decode(), kind=active.family.output_kind, second=second,
                     top_k=top_k, fill=result, masks=positions)


def _show_predictions(sel: Selection) -> None:
    result = sel.filled
    st.subheader("Predictions at the masks", anchor=False)
    st.caption("The softmax of the masked-LM head over the whole vocabulary at each mask, as the model gives it.")
    columns = st.columns(min(3, len(result.predictions)))
    for i, prediction in enumerate(result.predictions):
        with columns[i % len(columns)]:
            show_chart(cached_chart(prediction_bars, prediction), width="content")
    st.markdown("**Filled in:** " + md(result.filled_text))


def _show_change(sel: Selection) -> None:
    st.subheader("How every head's attention changed", anchor=False)
    if not sel.masks:
        st.caption("Click tokens above to mask them: this map then shows how far each head's attention moved.")
        return
    plain = fill(sel.model, sel.text, sel.second, (), sel.top_k)
    frame = attention_change(plain.trace, sel.filled.trace)
    st.caption("For each layer and head, the mean over query rows of the total variation distance between the "
               "attention without and with the masks (0: unchanged, 1: moved entirely).")
    show_chart(cached_chart(head_change_map, frame, sel.kind), width="content")


def map_selection(sel: Selection) -> Selection:
    """The map's row under its heading (layer, head, and for a pair the segment filter): `sel` with them and the
    trace as drawn (the chosen segment's block of each map kept)."""
    result, kind = sel.filled, sel.kind
    trace = result.trace
    pair = 1 in result.segments
    c_layer, c_head, c_segment = st.columns([1, 1, 2], vertical_alignment="bottom")
    with c_layer:
        layer = layer_picker("Layer", trace.n_layers(kind), KEYS["layer"])
    with c_head:
        head = head_picker("Head", trace.n_heads, KEYS["head"], trace=trace, kind=kind)
    which = "all"
    if pair:
        st.session_state.setdefault(SEGMENT_KEY, "all")
        which = c_segment.segmented_control("Segments (rows → columns)", list(SEGMENT_FILTERS), key=SEGMENT_KEY,
                                            help="A is the first sentence (with [CLS] and its [SEP]), B the second: "
                                                 "A→B keeps attention from A's tokens to B's; the rest shows as 0 "
                                                 "(weights are not renormalised).") or "all"
    return replace(sel, layer=layer, head=head, segment=which, trace=segment_filter(trace, result.segments, which))


def _show_map(sel: Selection) -> Selection:
    """The attention map with its row; returns `sel` completed by the row."""
    st.subheader("Attention map", anchor=False)
    sel = map_selection(sel)
    show_chart(cached_chart(attention_heatmap, sel.maps, sel.kind, sel.layer, sel.head, size=420, max_width=760),
               width="content")
    return sel


def _show_ablation(sel: Selection) -> None:
    st.subheader("Switch heads off", anchor=False)
    adapter = sel.model.adapter
    n_layers, n_heads = adapter.head_counts()[sel.kind]
    labels = [Head(sel.kind, layer, head).label for layer in range(n_layers) for head in range(n_heads)]
    key = sel.param_key("ablate")  # the Decode page's picker: a link's `ablate=` fills it
    chosen_heads(sel.model, key)  # labels of another model dropped
    chosen = st.multiselect("Heads to switch off", labels, key=key,
                            help="Each head's output is multiplied by 0 inside this call only.")
    if not chosen:
        st.caption("Pick heads to see the predictions without them.")
        return
    sel = replace(sel, ablated=tuple(parse_head(h, adapter) for h in chosen))
    ablated = fill(sel.model, sel.text, sel.second, sel.masks, sel.top_k, sel.ablated)
    for before, after in zip(sel.filled.predictions, ablated.predictions, strict=True):
        old = {i: v for _, i, v in after.top_k}
        kept = old.get(before.top_k[0][1])
        st.markdown(f"Token {before.position}: **{md(before.token)}** {before.prob:.3f} → with the heads off "
                    f"**{md(after.token)}** {after.prob:.3f}" +
                    (f" ({md(before.token)} now {kept:.3f})" if kept is not None and after.token != before.token
                     else ""))


def _show_attribution(sel: Selection) -> None:
    st.subheader("Which tokens the prediction leans on", anchor=False)
    result = sel.filled
    names = [f"token {p.position}: {p.token}" for p in result.predictions]
    key = sel.param_key("pred")
    if st.session_state.get(key) not in range(len(names)):  # a link's or another input's prediction: the first
        st.session_state[key] = 0
    pick = st.selectbox("Prediction", range(len(names)), format_func=names.__getitem__, key=key)
    prediction = result.predictions[pick or 0]
    shares = mask_attribution(sel.model.adapter, result.source.ids, prediction.position, prediction.top_k[0][1])
    top = max(shares) or 1.0
    show_chips(result.source.tokens, [s / top for s in shares], highlight=prediction.position,
               caption=f"Gradient × input of log p({prediction.token}) per input token (darker: larger share)")


def show_mask_page(active: ActiveModel) -> None:
    """The Decode page of an encoder-only model: predictions at the masks."""
    st.title("Predict at the masks", anchor=False)
    adapter = active.adapter
    st.caption(f"{md(active.option.name)} reads the whole input at once (no decoding): it predicts the tokens hidden "
               f"by its mask token {md(masking(active).mask_token)}. Type it in the text, or click tokens below to "
               "mask them.")
    sel = masked_selection(active)  # the pair, the masks, top-k and the one forward pass
    if sel is None:
        return
    show_chips(sel.filled.source.tokens, caption="What the model reads (masks in place)")
    if sel.filled.predictions:
        _show_predictions(sel)
    else:
        st.info(no_mask_message(adapter), icon=":material/touch_app:")
    _show_change(sel)
    sel = _show_map(sel)  # its row: layer, head, segment
    if sel.filled.predictions:
        _show_ablation(sel)
        _show_attribution(sel)


@shared
def _pair_result(model_key: str, _active: ActiveModel, text: str, second: str) -> DecodeResult:
    return masked_decode(_active.adapter, text, second)


def masked_attention_result(active: ActiveModel, text: str, column: st.delta_generator.DeltaGenerator, *, key: str
                            ) -> tuple[DecodeResult, str] | None:
    """The Attention page's input for an encoder-only model: the text and an optional second sentence in `column`
    (its "decoder input" choice does not apply); (the one forward pass's result, the second sentence), or None after
    a message."""
    second = model_text_input(column, "Second sentence (B, optional)", key=key,
                              help="A sentence pair: [CLS] A [SEP] B [SEP]; each map then offers the segment filter "
                                   "(A→A, B→B, A→B, B→A).")
    try:
        with st.spinner(decoding_message(active), show_time=True):
            return _pair_result(active.cache_key, active, text, second), second
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None


def segment_choice(active: ActiveModel, text: str, second: str, trace: AttentionTrace, *, key: str
                   ) -> AttentionTrace:
    """A sentence pair's segment filter over every map of `trace` (all maps unchanged for one sentence or a family
    that decodes): only the chosen block of each map kept, the model's weights unchanged."""
    if active.family.decodes or not second.strip():
        return trace
    _, segments, _ = read_masked(active.adapter, text, second)
    st.session_state.setdefault(key, "all")
    which = st.segmented_control("Segments (rows → columns)", list(SEGMENT_FILTERS), key=key,
                                 help="A is the first sentence (with [CLS] and its [SEP]), B the second: A→B keeps "
                                      "attention from A's tokens to B's; the rest shows as 0 (weights are not "
                                      "renormalised).") or "all"
    return segment_filter(trace, segments, which)
