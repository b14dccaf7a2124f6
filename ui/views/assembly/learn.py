"""Learn: a guided tour of attention on the live model and input — a query meets the keys, scaling, the masks,
softmax, values, several heads, cross-attention, one greedy step — each stage drawn from the model's own numbers (the
head computation of `ui/views/features/head_computation.py`), skipping, and saying so, what a family has not got."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from transformer.analysis import (
    BatchMask,
    HeadComputation,
    HeadSelectionError,
    batch_mask,
    computation_at,
    mask_matrix,
    model_positions,
    rotating_layers,
)
from transformer.charts import STAGES, heads_row_chart, mask_picture, position_picture, stage_charts, visible_token
from transformer.decode import DecodeResult
from ui.models import ActiveModel, model_options, select_model
from ui.server import shared

from ..features import captured_for
from ..kit import (
    LINK_PARAMS,
    NEXT_STEP_KEY,
    PREV_STEP_KEY,
    TEXT_KEY,
    TEXT_TASK_KEY,
    Selection,
    bind_text,
    folded_controls,
    greedy_or_message,
    model_text_input,
    presenting,
    share_text,
    show_chart,
)

STAGE_KEY = LINK_PARAMS["learn"]["stage"]  # the tour stage shown, 0-based (links: from 1)
COMPOSITION_MODEL = "shipped:induction"  # the example of heads that build on heads (checkpoints/induction)
COMPOSITION_PROMPT = "qXk3Bw7pLmZ2aRt9qXk3Bw7pLm"  # a chunk written twice: the second copy is predictable


@dataclass(frozen=True)
class TourStage:
    """One stage of the tour: its title, what it says, the charts (stage names of `stage_charts`) it draws."""

    name: str
    title: str
    text: str
    charts: tuple[str, ...] = ()


TOUR = (
    TourStage("meet", "1 · A query meets the keys",
              "Each token asks a question (its **query** vector) and offers an answer key. How well the query "
              "matches a key is their dot product: the elementwise products, summed.",
              ("query", "keys", "products", "dots")),
    TourStage("scale", "2 · Scaling",
              "The dot products are multiplied by the model's scale, 1/√d_head in most models (1 in T5), so that "
              "long vectors do not make the softmax saturate.", ("dots", "scores")),
    TourStage("masks", "3 · Masks and biases",
              "Before the softmax the model adds what it must: −∞ where a query may not look (a later token in "
              "the decoder: the causal mask; padding in a batch), and in T5 a learned bias per relative distance.",
              ("terms", "scores")),
    TourStage("softmax", "4 · Softmax",
              "The softmax turns the scores into weights that are positive and sum to 1: the row of the attention "
              "map.", ("weights",)),
    TourStage("values", "5 · Values",
              "Each key also carries a **value** vector. The head's output is the weighted sum of the values, and "
              "after the output projection, the head's share of what the layer adds. What a key contributes is "
              "the size of its weighted, projected value (Kobayashi et al. 2020).",
              ("values", "weighted_values", "head_output", "share", "contributions")),
    TourStage("heads", "6 · Several heads",
              "A layer runs several heads side by side, each with its own queries, keys and values; their outputs "
              "are concatenated and projected. Here is where each head of this layer looks from the same query."),
    TourStage("cross", "7 · Cross-attention",
              "In an encoder-decoder the decoder's queries meet the encoder's keys and values: this is how the "
              "output reads the input.", ("weights", "contributions")),
    TourStage("positions", "8 · Where a token is: positions",
              "Attention itself does not see order: the model adds it. Here is how this model does, read from its "
              "own weights."),
    TourStage("step", "9 · One greedy decoding step",
              "The last layer's output goes through the output head; the most probable token is chosen, fed back "
              "in, and the next step asks its questions."),
)


def _move(delta: int) -> None:
    st.session_state[STAGE_KEY] = min(max(int(st.session_state.get(STAGE_KEY, 0)) + delta, 0), len(TOUR) - 1)


def tour_navigation() -> TourStage:
    """Prev / Next (keys ← and →: in presenter mode one key press reveals the next stage) and the stage picker."""
    st.session_state.setdefault(STAGE_KEY, 0)
    prev_col, next_col, pick_col = st.columns([2, 2, 5], vertical_alignment="bottom")
    stage = int(st.session_state[STAGE_KEY])
    prev_col.button("Prev", key="learn_prev", icon=":material/chevron_left:", on_click=_move, args=(-1,),
                    disabled=stage == 0, width="stretch", shortcut=PREV_STEP_KEY)
    next_col.button("Next", key="learn_next", icon=":material/chevron_right:", on_click=_move, args=(1,),
                    disabled=stage == len(TOUR) - 1, width="stretch", shortcut=NEXT_STEP_KEY)
    pick_col.selectbox("Stage", range(len(TOUR)), format_func=lambda i: TOUR[i].title, key=STAGE_KEY,
                       label_visibility="collapsed" if presenting() else "visible")  # (on a projector: its title)
    return TOUR[int(st.session_state[STAGE_KEY])]


def spread_row(result: DecodeResult, kind: str, head: int = 0) -> int:
    """The row (query) of layer 1, `head` of `kind` whose weights are the most spread (highest entropy): the tour
    shows a softmax with several bars, not the first decoder query's single bar at 1.0."""
    weights = result.trace.maps[kind][0, head].float()  # (Q, K)
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1)
    return int(entropy.argmax())


def _computation(active: ActiveModel, result: DecodeResult, kind: str, head: int) -> HeadComputation | None:
    captured = captured_for(active, result, None)
    row = spread_row(result, kind, head)
    try:
        return computation_at(active.adapter, captured, kind, 0, head, row)
    except HeadSelectionError as exc:
        st.warning(str(exc), icon=":material/error:")
        return None


def learn_selection(active: ActiveModel) -> Selection | None:
    """The Learn page's input (folded in presenter mode, so the stage's first picture is on the first screen) and its
    greedy decode as a Selection; None after a message when it cannot be read."""
    key = LINK_PARAMS["learn"]["text"]
    bind_text(key, active)
    with folded_controls("Input", key="learn_controls"):
        text = model_text_input(st, active.family.input_role.capitalize(), key=key, on_change=share_text,
                                args=(key,))
    result = greedy_or_message(active, text)
    return None if result is None else Selection("learn", active, text, result)


def show_stage(sel: Selection, stage: TourStage) -> None:
    """One stage of the tour on the selected model and input; what the family has not got is said and skipped."""
    active, result = sel.model, sel.result
    family = result.trace.family
    st.subheader(stage.title, anchor=False)
    st.markdown(stage.text)
    if stage.name == "positions":
        scheme = model_positions(active.adapter)  # the scheme, and which layers have it where only some do
        if scheme is None:
            st.info(f"{active.option.name}: no position table, relative bias or rotation was found in the model.",
                    icon=":material/info:")
            return
        st.markdown(scheme.sentence)
        show_chart(position_picture(scheme, active.option.name, rotating_layers(active.adapter)), key="learn_positions",
                   width="content")
        return
    if stage.name == "cross" and not family.has_cross:
        reads = ("one self-attention reads the prompt and what it has written so far" if family.decodes else
                 "one self-attention reads the whole input at once, in both directions")
        st.info(f"{active.option.name} is a {family.name} model: it has no cross-attention. Its {reads}.",
                icon=":material/info:")
        return
    if stage.name == "step" and not family.decodes:
        st.info(f"{active.option.name} is an {family.name} model: it does not decode. It predicts the tokens hidden "
                "by its mask token, all at once: [Predict at the masks on the Decode page](/decode).",
                icon=":material/info:")
        return
    kind = family.cross_kind if stage.name == "cross" and family.cross_kind is not None else family.output_kind
    c = _computation(active, result, kind, 0)
    if c is None:
        return
    q_tokens, k_tokens = captured_for(active, result, None).tokens(kind)
    st.caption(f"{active.option.name} · {family.title(kind)} · layer 1 · head 1 · the query of "
               f"‹{visible_token(q_tokens[c.query])}› (position {c.query + 1}), the query whose weights are the most "
               "spread here (the highest entropy), in the greedy decode. "
               f"[Open the full view on the Attention page](/attention)")
    if stage.name == "heads":
        captured = captured_for(active, result, None)
        weights = [computation_at(active.adapter, captured, kind, 0, head, c.query).weights
                   for head in range(c.n_heads)]
        chart = heads_row_chart(weights, k_tokens, "Each head's weights from the same query")
        show_chart(chart, key="learn_heads", width="content")
        composition_example(active)
        return
    if stage.name == "step":
        step = result.steps[0]
        st.markdown(f"Step 1 chose ‹{visible_token(step.token)}› with probability {step.prob:.1%}.")
        st.dataframe(pd.DataFrame(step.top_k, columns=["token", "probability"]), hide_index=True,
                     key="learn_topk")
        st.caption(f"The whole output: {result.output_text or '(empty)'} · [Step through it on the Decode page]"
                   "(/decode)")
        return
    if stage.name == "masks":
        show_masks(active, result)
    charts = stage_charts(c, k_tokens)
    names = [n for n in charts if n.startswith("term:")] if "terms" in stage.charts else []
    if "terms" in stage.charts and not names:
        st.info("This query's scores get no mask or bias here (every key is visible to it).", icon=":material/info:")
    for name in [*names, *(n for n in stage.charts if n in charts)]:
        # the formula beside its chart where the row has room, else under it: never drawn over the chart
        with st.container(horizontal=True, vertical_alignment="center", gap="large"):
            show_chart(charts[name], key=f"learn_{stage.name}_{name}", width="content")
            if name in STAGES:
                st.latex(STAGES[name][1], width="content")


def _open_composition_example() -> None:
    select_model(COMPOSITION_MODEL)
    state = st.session_state
    state[TEXT_TASK_KEY], state[TEXT_KEY] = "induction", COMPOSITION_PROMPT  # the prompt kept for the new task
    state[LINK_PARAMS["learn"]["text"]] = COMPOSITION_PROMPT


def composition_example(active: ActiveModel) -> None:
    """Heads that build on heads: on the induction model, its known heads named; elsewhere a button that opens it."""
    known = active.card.get("known_heads") or {}
    if active.option.id == COMPOSITION_MODEL and known:
        named = " and ".join(f"`{label}` ({role})" for label, role in known.items())
        st.markdown(f"**Heads that build on heads.** This model's card names {named}: in the second copy of a "
                    "repeated chunk, the induction head finds the token after the earlier occurrence of the current "
                    "one by keys that the previous-token head wrote there in layer 1. Pick them on the Attention page "
                    "(layer 1 and 2) with this prompt.")
    elif any(o.id == COMPOSITION_MODEL for o in model_options()):
        st.button("Heads that build on heads: open the induction model", key="learn_composition",
                  on_click=_open_composition_example, icon=":material/account_tree:",
                  help="checkpoints/induction: a 2-layer model whose induction head reads what its previous-token "
                  "head wrote, with a repeated prompt")


def show_masks(active: ActiveModel, result: DecodeResult) -> None:
    """Each kind's mask as the model added it in the teacher-forced forward (layer 1), and what cached decoding does."""
    captured = captured_for(active, result, None)
    family = result.trace.family
    with st.container(horizontal=True, gap="large"):  # side by side where they fit, else the next one wraps under
        for kind in family.kinds:
            q_tokens, k_tokens = captured.tokens(kind)
            show_chart(mask_picture(mask_matrix(captured, kind), q_tokens, k_tokens, family.title(kind),
                                    (0, min(len(k_tokens), 40))), key=f"learn_mask_{kind}", width="content")
    st.caption("These are the masks of one forward over the whole sequence, read from the model (one input: no "
               "padding, so an encoder adds none). When decoding step by step with a cache, the causal mask is "
               "implicit: only the past keys exist, so there is nothing later to hide.")
    show_batch_mask(active, result.source_text)


def longer_input(text: str) -> str:
    """A second input longer than `text` (its first half again), for a batch that pads `text` as training does."""
    return f"{text}{' ' if ' ' in text else ''}{text[: max(len(text) // 2, 1)]}"


@shared
def _batch_mask(weights: str, _active: ActiveModel, text: str) -> BatchMask:
    return batch_mask(_active.adapter, text, longer_input(text))


def show_batch_mask(active: ActiveModel, text: str) -> None:
    """The padding mask of a batch: `text` padded beside a longer input, as in training, from the model's own mask."""
    try:
        m = _batch_mask(active.cache_key, active, text)
    except (HeadSelectionError, ValueError) as exc:  # e.g. the longer input past the model's limit
        st.info(f"No batch to show for this input: {exc}", icon=":material/info:")
        return
    start, stop = m.padding
    window = (max(0, stop - 40), stop) if stop > 40 else (0, len(m.key_tokens))
    title = f"{active.family.title(m.kind)} · in a batch: this input padded beside a longer one"
    show_chart(mask_picture(m.mask, m.query_tokens, m.key_tokens, title, window), key="learn_mask_batch",
               width="content")  # its own size (stretched to the column, its last keys and legend went past it)
    st.caption(f"In training, inputs of different lengths share a batch: this one gets {stop - start} padding "
               f"position(s) to match “{longer_input(text)}”, and the model hides them (−∞) from every real token, so "
               "its weights are those it has alone.")
