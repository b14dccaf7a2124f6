"""The Compare page's views: the second model's picker, both outputs with their first divergence and the step table,
the same map of both models at one step, and their difference."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import pandas as pd
import streamlit as st

from transformer.adapters import HFModelError
from transformer.analysis import attention_difference, first_divergence
from transformer.charts import attention_heatmap, difference_heatmap, window_title
from transformer.decode import ALL_TITLES, AttentionTrace, DecodeResult, InputError
from transformer.store import CheckpointError, checkpoint_task
from ui.models import LIVE, RUN, ActiveModel, ModelOption, model_options, resolve

from ..kit import (
    LINK_PARAMS,
    MAP_WIDTH,
    Column,
    Selection,
    bind_text,
    chart_heading,
    greedy,
    greedy_or_message,
    head_keys,
    head_label,
    head_picker,
    key_window,
    kind_picker,
    layer_picker,
    map_columns,
    map_kind,
    md_token,
    model_caption,
    model_text_input,
    needs_page_width,
    share_text,
    show_chart,
    show_chips,
    show_small_table,
    slide_downloads,
    slide_title,
    visible,
)

KEYS = LINK_PARAMS["compare"]  # link parameter -> widget key
MODEL_B_KEY, STEP_KEY = KEYS["compare"], KEYS["step"]
STEP_COLUMNS = {"step": Column("step", "%d"), "A": Column("A token"),
                "A prob": Column("A prob", "%.3f", "Model A's probability of its token at this step."),
                "B": Column("B token"), "B prob": Column("B prob", "%.3f", "Model B's probability of its token."),
                "same": Column("tokens")}


def default_model_b(a: ModelOption, options: list[ModelOption], reads: Callable[[ModelOption], bool]) -> str:
    """Model B's first choice, the first that `reads` A's input (decodes it, no unknown tokens) of: the live run or
    a saved run (the training case), a model of A's task (reverse and reverse-decoder-only), another model of A's
    language pair (named so: multi30k-en-de and toy-en-de); else A against itself (no other model reads the input)."""
    others = [o for o in options if o.id != a.id]
    runs = [o for o in others if o.source in (LIVE, RUN)]
    task = checkpoint_task(a.path) if a.path is not None else None
    same_task = [o for o in others if task is not None and o.path is not None and checkpoint_task(o.path) == task]
    pair = re.search(r"[a-z]{2}-[a-z]{2}$", a.name)
    same_pair = [o for o in others if pair and o.name.endswith(pair.group()) and o.name != pair.group()]
    seen: set[str] = set()
    for option in (*runs, *same_task, *same_pair):
        if option.id not in seen and reads(option):
            return option.id
        seen.add(option.id)
    return a.id


def reads_input(text: str) -> Callable[[ModelOption], bool]:
    """Whether a model decodes `text` with no unknown token (False for an encoder-only model or one that does not
    load)."""
    def reads(option: ModelOption) -> bool:
        try:
            other = resolve(option)
            return other.family.decodes and not other.adapter.tokenize_source(text).unknown
        except (CheckpointError, HFModelError, InputError):
            return False
    return reads


def pick_model_b(active: ActiveModel) -> ActiveModel | None:
    """The "Model B" picker (another model than A that reads A's input, by default); None after saying why B cannot
    be loaded."""
    options = model_options()
    by_id = {o.id: o for o in options}
    if st.session_state.get(MODEL_B_KEY) not in by_id:
        bind_text(KEYS["text"], active)
        st.session_state[MODEL_B_KEY] = default_model_b(active.option, options,
                                                        reads_input(st.session_state[KEYS["text"]]))
    chosen = st.selectbox("Model B", list(by_id), format_func=lambda i: by_id[i].label, key=MODEL_B_KEY,
                          help="Model A is the one picked in the sidebar. The live training run compares its "
                               "newest weights with any saved checkpoint. B opens on a model that reads A's input "
                               "(no unknown word), else on A itself.")
    option: ModelOption = by_id[chosen]
    try:
        return resolve(option)
    except (CheckpointError, HFModelError) as exc:
        st.error(f"Cannot load {option.name}: {exc}", icon=":material/error:")
        return None


def step_table(a: DecodeResult, b: DecodeResult) -> pd.DataFrame:
    """One row per output step: each model's token and probability, and whether they agree."""
    rows = []
    for t in range(max(len(a.steps), len(b.steps))):
        sa = a.steps[t] if t < len(a.steps) else None
        sb = b.steps[t] if t < len(b.steps) else None
        rows.append({"step": t + 1, "A": visible(sa.token) if sa else "", "A prob": sa.prob if sa else None,
                     "B": visible(sb.token) if sb else "", "B prob": sb.prob if sb else None,
                     "same": sa is not None and sb is not None and sa.token == sb.token})
    return pd.DataFrame(rows)


def divergence_message(a: DecodeResult, b: DecodeResult) -> int | None:
    """Say where the outputs first part (or that they never do); returns that 0-based step."""
    split = first_divergence(a.output_tokens, b.output_tokens)
    if split is None:
        st.success(f"No divergence: both models produce the same {len(a.steps)} tokens.", icon=":material/check:")
        return None
    token_a = md_token(a.output_tokens[split]) if split < len(a.steps) else "(ended)"
    token_b = md_token(b.output_tokens[split]) if split < len(b.steps) else "(ended)"
    st.warning(f"First divergence at step {split + 1}: A ‹{token_a}› vs B ‹{token_b}›.",
               icon=":material/call_split:")
    return split


def step_picker(a: DecodeResult, b: DecodeResult) -> int:
    """The "Step" slider both maps follow (1-based in the widget, 0-based returned); a step past both outputs (a stale
    link) falls back to the last one with a note."""
    n_steps = max(len(a.steps), len(b.steps))
    state = st.session_state
    asked = int(state.get(STEP_KEY, 1))
    if asked > n_steps:
        st.info(f"Step {asked} is past both outputs ({n_steps} steps): showing step {n_steps}.",
                icon=":material/link_off:")
    state[STEP_KEY] = min(max(asked, 1), n_steps)
    if n_steps > 1:
        st.slider("Step", min_value=1, max_value=n_steps, key=STEP_KEY,
                  help="Which output step both maps show: the rows up to it, the current one outlined.")
    return state[STEP_KEY] - 1


def step_caption(sel: Selection) -> str:
    """What each model chose at the selected step: 'Step 3 · A ‹x› 91.0% · B ‹y› 55.2%' (or that its output has
    ended)."""
    t = sel.at

    def chose(tag: str, result: DecodeResult) -> str:
        if t >= len(result.steps):
            return f"{tag} (ended after {len(result.steps)} steps)"
        step = result.steps[t]
        return f"{tag} ‹{md_token(step.token)}› {step.prob:.1%}"
    return f"**Step {t + 1}** · {chose('A', sel.result)} · {chose('B', sel.other.result)}"


def compare_decodes(active: ActiveModel) -> Selection | None:
    """The top row of Compare's two-models mode (model B, the input) and both greedy decodes, as a Selection of A
    whose `against` is B's; None after a message when there is nothing to compare."""
    col_b, col_text = st.columns([2, 3])
    with col_b:
        other = pick_model_b(active)
    bind_text(KEYS["text"], active)
    text = model_text_input(col_text, "Input", key=KEYS["text"], on_change=share_text, args=(KEYS["text"],))
    if other is None:
        return None
    if other.option.id == active.option.id:
        st.caption("B is A itself: no other model here reads this input without unknown words. Pick another B "
                   "above to compare two models on an input both read.")
    result_a = greedy_or_message(active, text)
    if result_a is None:
        return None
    try:
        result_b = greedy(other, text)
    except InputError as exc:
        st.warning(f"Model B: {exc}", icon=":material/edit_note:")
        return None
    return Selection("compare", active, text, result_a, against=Selection("compare", other, text, result_b))


def compare_selection(sel: Selection) -> Selection:
    """Compare's picker row (kind, step, layer, head) under both outputs: `sel` (from compare_decodes) with the
    choices, each side with its kind (each model's own where the families differ)."""
    other = sel.other
    trace_a, trace_b = sel.result.trace, other.result.trace
    c_kind, c_step, c_layer, c_head = st.columns([3, 3, 2, 3], vertical_alignment="bottom")
    kinds = compare_kinds((trace_a, trace_b))  # each model's own kind when the families differ
    with c_kind:
        if kinds is None:
            kind = kind_picker("Attention", KEYS["kind"], trace_a)
            kinds = (kind, kind)
    with c_step:
        t = step_picker(sel.result, other.result)
    n_layers = min(trace_a.n_layers(kinds[0]), trace_b.n_layers(kinds[1]))
    n_heads = min(trace_a.n_heads, trace_b.n_heads)
    with c_layer:
        layer = layer_picker("Layer", n_layers, KEYS["layer"])
    with c_head:
        head = head_picker("Head", n_heads, KEYS["head"], trace=trace_a, kind=kinds[0])
        head_keys(KEYS["head"], n_heads)
    if (trace_a.n_layers(kinds[0]), trace_a.n_heads) != (trace_b.n_layers(kinds[1]), trace_b.n_heads):
        st.caption(f"The models differ in size: only the {n_layers} layer(s) and {n_heads} head(s) both have are "
                   "offered.")
    return replace(sel, kind=kinds[0], layer=layer, head=head, step=t,
                   against=replace(other, kind=kinds[1], layer=layer, head=head, step=t))


def show_outputs(sel: Selection) -> None:
    """Both outputs side by side, the first divergence outlined, and the step-by-step table."""
    result_a, result_b = sel.result, sel.other.result
    split = divergence_message(result_a, result_b)
    for column, tag, model, result in zip(st.columns(2, gap="large"), "AB", (sel.model, sel.other.model),
                                          (result_a, result_b), strict=True):
        with column:
            st.markdown(model_caption(tag, model))
            show_chips(result.output_tokens, highlight=split, caption="output (first divergence outlined)")
    with st.expander("Step by step", icon=":material/table_rows:"):
        steps = step_table(result_a, result_b)
        steps["same"] = steps["same"].map({True: "same", False: "differs"})
        show_small_table(steps, STEP_COLUMNS, key="compare_steps")


def _stem(kind: str, layer: int, head: int | None) -> str:
    return f"{kind}_layer{layer + 1}_{'mean' if head is None else f'head{head + 1}'}"


def compare_kinds(traces: tuple[AttentionTrace, AttentionTrace]) -> tuple[str, str] | None:
    """Each model's own map kind when the two are of different families (cross-attention beside a decoder-only
    model's self-attention); None when they share a family, so one kind picker drives both."""
    a, b = traces
    if a.family_name == b.family_name:
        return None
    st.info(f"A is {a.family.name} and B {b.family.name}: each map shows the attention its model reads the "
            f"input with (A: {ALL_TITLES[map_kind(a)].lower()}, B: {ALL_TITLES[map_kind(b)].lower()}), at the same "
            "output step. The models have different attention kinds, so there is no difference map.",
            icon=":material/compare:")
    return map_kind(a), map_kind(b)


def show_both_maps(sel: Selection) -> None:
    """The selected layer and head of both models (each side of its own kind), rows up to the selected step (the
    encoder's map is the same at every step); an output that ended shows its last row."""
    sides = (sel, sel.other)
    models, traces, kinds = (s.model for s in sides), [s.result.trace for s in sides], [s.kind for s in sides]
    layer, head, t, text = sel.layer, sel.head, sel.at, sel.text
    # a long input's maps go one above the other at the page's width, through one window of keys for both
    longest = max(range(2), key=lambda i: traces[i].axis_sizes(kinds[i])[1])
    wide = needs_page_width(traces[longest], kinds[longest])
    window = key_window(traces[longest], kinds[longest], "compare") if wide else None
    columns = map_columns(traces[longest], kinds[longest], [1, 1])
    for column, tag, model, trace, kind in zip(columns, "AB", models, traces, kinds, strict=True):
        stepped = kind != trace.family.encoder_kind
        row = min(trace.step_offset + t, trace.axis_sizes(kind)[0] - 1) if stepped else None
        keys = None if window is None else _within(window, trace.axis_sizes(kind)[1])
        with column:  # the title as page text: it wraps in the column, where a chart title widened the chart past it
            heading = (f"{tag} · {model.option.name} · {ALL_TITLES[kind]} · layer {layer + 1} · "
                       f"{head_label(head, spelled=True).lower()}" + (f" · step {row + 1}" if row is not None else "")
                       + ("" if keys is None else window_title(*keys, trace.axis_sizes(kind)[1])))
            chart_heading(heading)
            heatmap = attention_heatmap(trace, kind, layer, head, size=200, max_row=row, highlight_row=row, title="",
                                        keys=keys, max_width=MAP_WIDTH if wide else None)
            show_chart(heatmap, key=f"compare_map_{tag.lower()}", width="content")
            slide_downloads(heatmap, slide_title(model, text).lines(f"Model {heading}"),
                            f"compare_{tag.lower()}_{_stem(kind, layer, head)}", f"compare_map_{tag.lower()}")


def _within(window: tuple[int, int], n_keys: int) -> tuple[int, int]:
    """The shared key window cut to a map of `n_keys` keys (the other model's tokens may be fewer)."""
    start = min(window[0], n_keys - 1)
    return start, max(start + 1, min(window[1], n_keys))


def show_difference(sel: Selection) -> None:
    """B − A over the rows and columns whose tokens agree in both, or why there is no such map. Both models and the
    input are named on its slide."""
    models, text = (sel.model, sel.other.model), sel.text
    trace_a, trace_b, kind, layer, head = sel.result.trace, sel.other.result.trace, sel.kind, sel.layer, sel.head
    try:
        diff = attention_difference(trace_a, trace_b, kind, layer, head)
    except ValueError as exc:
        st.info(f"No difference map: {exc}.", icon=":material/info:")
        return
    if diff.difference.size == 0:
        st.info("No difference map: the outputs part at the first step, so no decoder row is shared.",
                icon=":material/info:")
        return
    left_out = f"; {diff.rows_left_out} row(s) after the first divergence left out" if diff.rows_left_out else ""
    st.caption(f"Largest |B − A| = {diff.max_abs:.3f} over {diff.difference.shape[0]} shared row(s){left_out}. "
               "Blue: B attends more; red: A attends more.")
    view = f"B − A · {ALL_TITLES[kind]} · layer {layer + 1} · {head_label(head, spelled=True).lower()}"
    chart = difference_heatmap(diff, size=420, title=view)
    a, b = (slide_title(model, text).model for model in models)
    show_chart(chart, key="compare_difference", width="content")
    slide_downloads(chart, [view, f"Input: {text}", f"A: {a}", f"B: {b}"],
                    f"compare_difference_{_stem(kind, layer, head)}", "compare_difference")
