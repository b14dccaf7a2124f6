"""Decode: step through greedy decoding one token at a time, force a token, compare with teacher forcing."""
from functools import partial

import streamlit as st

from transformer.analysis import Head
from transformer.charts import (
    ChartTooLargeError,
    attention_grid,
    attention_heatmap,
    decoder_row_chart,
    source_strip,
    topk_bars,
)
from transformer.decode import MAX_INPUT_CHARS, DecodeResult, InputError
from ui.links import NEXT_STEP_KEY, PREV_STEP_KEY, head_keys, presenting
from ui.links import write as write_link
from ui.models import ActiveModel
from ui.shell import ensure_frame
from ui.views import (
    ablated_run,
    bind_reference,
    bind_text,
    cached_chart,
    chart_heading,
    clicked_note,
    gold_alignment_for,
    gold_cells,
    greedy,
    greedy_or_message,
    grid_cell,
    grid_key,
    head_label,
    head_picker,
    head_selection,
    layer_picker,
    md_token,
    off_panels,
    reference_for,
    require_model,
    share_reference,
    share_text,
    show_ablated_step,
    show_alignment_scores,
    show_chart,
    show_chips,
    show_comparison,
    show_step_attribution,
    show_weights,
    teacher,
    toggle_clicked_head,
    visible,
)
from ui.views import decode_state as ds

ensure_frame()
active = require_model()
st.title("Decode", anchor=False)
st.caption("Type a sentence and walk through the model's answer one token at a time: what each step attends to, "
           "which tokens it considered, and what happens if it had picked another one.")
show_weights(active)

bind_text("decode_text", active)
st.session_state.setdefault("decode_top_k", 5)
col_text, col_ref, col_k = st.columns([5, 4, 1])
text = col_text.text_input("Input", key="decode_text", on_change=share_text, args=("decode_text",),
                           max_chars=MAX_INPUT_CHARS)
bind_reference("decode_reference", active, text)
reference = col_ref.text_input("Reference output (for teacher forcing)", key="decode_reference",
                               on_change=share_reference, args=("decode_reference",), max_chars=MAX_INPUT_CHARS,
                               help="The decoder is fed this target instead of its own output. Leave empty to skip.")
top_k = col_k.number_input("Top-k", min_value=2, max_value=20, step=1, key="decode_top_k")

free = greedy_or_message(active, text, top_k=top_k)
if free is None:
    st.stop()
prefix = ds.forced_prefix(active.task_name, text)
forced = greedy(active, text, top_k=top_k, forced=prefix.tokens) if prefix is not None else None
taught = None
if reference.strip():
    try:
        taught = teacher(active, text, reference, top_k=top_k)
    except InputError as exc:
        st.warning(f"Teacher forcing: {exc}", icon=":material/edit_note:")

results = {ds.GREEDY: free, ds.FORCED: forced, ds.TEACHER: taught}
available = [view for view, result in results.items() if result is not None]
if presenting():  # on a projector, the teacher-forced card only while it is the output being stepped through
    available = [v for v in available if v != ds.TEACHER or st.session_state.get(ds.VIEW_KEY) == ds.TEACHER]
summary = st.columns(len(available))
for column, view in zip(summary, available):
    result = results[view]
    with column.container(border=True):
        st.markdown(f"**{ds.VIEW_LABELS[view]}**")
        highlight = prefix.step if view == ds.FORCED else None
        show_chips(result.output_tokens, highlight=highlight,
                   caption="predictions at each reference position" if view == ds.TEACHER else "output")
        if view == ds.FORCED:
            st.caption(f"‹{md_token(prefix.tokens[-1])}› forced at step {prefix.step + 1}, then greedy again.")
            st.button("Clear forced token", key="decode_unforce", on_click=ds.clear_forced, icon=":material/close:")
        elif view == ds.GREEDY and not result.finished:
            st.caption("Stopped at the step limit without producing </s>.")
ablated, ablate_heads = None, []
if not presenting() or st.session_state.get("decode_ablate"):  # on a projector only when heads are switched off
    with st.expander("Switch heads off (ablation)", expanded=bool(st.session_state.get("decode_ablate"))):
        ablate_heads = head_selection(active, "decode_ablate")
        ablated = ablated_run(active, text, ablate_heads, top_k=top_k)
        if ablated is not None:
            show_comparison(free, ablated, ablate_heads, key="decode_ablation")


@st.fragment
def step_through(active: ActiveModel, text: str, reference: str, results: dict[str, DecodeResult | None],
                 prefix: ds.ForcedPrefix | None, ablated: DecodeResult | None, ablate_heads: list[Head]) -> None:
    """Everything that follows the step, layer and head: Next, Prev, the slider and the pickers rerun only this
    part of the page (the inputs, the decoding and the sidebar stay as they are)."""
    if st.session_state.pop(ds.RERUN_APP_KEY, False):
        st.rerun(scope="app")  # a forced token: the outputs above change too
    available = [view for view, result in results.items() if result is not None]
    ds.prepare_view(available)
    view = st.radio("Step through", available, format_func=ds.VIEW_LABELS.__getitem__, key=ds.VIEW_KEY,
                    horizontal=True) if len(available) > 1 else ds.GREEDY
    result = results[view]
    trace = result.trace
    n_steps = len(result.steps)
    t = ds.prepare_step(n_steps, (active.task_name, text))

    nav_prev, nav_next, nav_slider, nav_layer, nav_head = st.columns([1.8, 1.8, 4.6, 2, 2], vertical_alignment="bottom")
    nav_prev.button("Prev", key="decode_prev", icon=":material/chevron_left:", on_click=ds.move_step,
                    args=(-1, n_steps), disabled=t == 0, width="stretch", shortcut=PREV_STEP_KEY)
    nav_next.button("Next", key="decode_next", icon=":material/chevron_right:", on_click=ds.move_step,
                    args=(1, n_steps), disabled=t == n_steps - 1, width="stretch", shortcut=NEXT_STEP_KEY)
    if n_steps > 1:
        nav_slider.slider("Step", min_value=1, max_value=n_steps, key=ds.STEP_KEY)
    else:
        nav_slider.caption("The output has a single step.")
    with nav_layer:
        layer = layer_picker("Decoder layer", trace.n_layers("cross"), "decode_layer")
    with nav_head:
        head = head_picker("Head", trace.n_heads, "decode_head")
        head_keys("decode_head", trace.n_heads)

    step = result.steps[t]
    st.subheader(f"Step {t + 1} of {n_steps}: input ‹{md_token(trace.decoder_input_tokens[t])}› → "
                 f"output ‹{md_token(step.token)}› ({step.prob:.1%})", anchor=False)
    left, right = st.columns([3, 2], gap="large")
    with left:
        if view == ds.TEACHER:
            show_chips(trace.decoder_input_tokens, highlight=t, dim_from=t + 1, caption="decoder input: the reference")
        show_chips(result.output_tokens[: t + 1], highlight=t,
                   caption="predictions so far" if view == ds.TEACHER else "output so far")
        self_row = trace.matrix("decoder_self", layer, head)[t, : t + 1].tolist()
        chart_heading(f"Decoder self-attention of step {t + 1} over the prefix")
        show_chart(cached_chart(decoder_row_chart, trace.decoder_input_tokens[: t + 1], self_row, max_width=470,
                                all_tokens=trace.decoder_input_tokens), width="content", key="decode_prefix_strip")
    with right:
        chart_heading(f"Top-{len(step.top_k)} candidates at step {t + 1}")
        show_chart(cached_chart(topk_bars, step.top_k, chosen=step.token, width=240), key="decode_topk",
                   width="content")
        alternatives = [tok for tok, _ in step.top_k if tok != step.token]
        if alternatives:
            if st.session_state.get(ds.FORCE_CHOICE_KEY) not in alternatives:
                st.session_state[ds.FORCE_CHOICE_KEY] = alternatives[0]
            pick, go = st.columns([3, 2], vertical_alignment="bottom")
            pick.selectbox("Force another token here", alternatives, format_func=visible, key=ds.FORCE_CHOICE_KEY)
            go.button("Decode on", key="decode_force", icon=":material/call_split:", on_click=ds.force_token,
                      args=(active.task_name, text, result, t), width="stretch",
                      help="Feed this token at this step and let the model decode greedily from there.")
    cross_row = trace.matrix("cross", layer, head)[t].tolist()
    chart_heading(f"Source tokens shaded by the attention of step {t + 1} · layer {layer + 1} · "
                  f"{head_label(head).lower()}")
    show_chart(cached_chart(source_strip, trace.source_tokens, cross_row, max_width=1000), width="content",
               key="decode_source_strip")
    if ablated is not None and view == ds.GREEDY:
        show_ablated_step(ablated, t, layer, head, key="decode_ablated_strip")
    if view != ds.TEACHER:  # attribution explains the model's own choices
        with st.expander("Attribution: what the chosen token depends on", key="decode_attr_open",
                         on_change="rerun", icon=":material/insights:") as attribution:
            if attribution.open:  # computed (Integrated Gradients) and drawn only while the expander is open
                show_step_attribution(active, text, [s.token_id for s in result.steps], trace, t, key="decode_attr")

    st.divider()
    alignment = gold_alignment_for(active, text)
    if view == ds.TEACHER and reference.strip() != reference_for(active, text):
        alignment = None  # the gold alignment belongs to the correct output, not to an arbitrary reference
    gold = gold_cells(alignment, len(trace.decoder_input_tokens))
    # the map with its labels and legend is ~size + 150 px wide: at 1400 px the half-width column clipped its legend
    map_col, side_col = st.columns([9, 6], gap="large")
    with map_col:
        chart_heading(f"Cross-attention rows up to step {t + 1} · layer {layer + 1} · {head_label(head).lower()}")
        show_chart(cached_chart(attention_heatmap, trace, "cross", layer, head, max_row=t, highlight_row=t,
                                gold=gold if st.session_state.get("decode_gold", True) else (),
                                size=440 if presenting() else 330, title="", large_labels=presenting()),
                   key="decode_heatmap", width="content")
    with side_col:
        if gold:
            st.toggle("Outline the gold alignment", value=True, key="decode_gold",
                      help="The source token each correct output token comes from.")
            show_alignment_scores(trace, alignment, key="decode_alignment")
        st.caption("Rows are decoder inputs (queries), columns source tokens (keys); rows after the current step are "
                   "shaded grey and the current step's row is outlined in red.")
    clicked_note("decode_grid")
    try:
        grid = cached_chart(attention_grid, trace, "cross", layers=[layer], max_row=t,
                            cell=grid_cell(trace.n_heads, 150), off=off_panels(ablate_heads, "cross"), clicks="switch")
    except ChartTooLargeError as exc:
        st.info(str(exc))
    else:
        st.caption("Click a head's panel to switch that head off (see ablation, above); a second click: on again.")
        show_chart(grid, width="content", key=grid_key("decode_grid"), selection_mode="cell",
                   on_select=partial(toggle_clicked_head, "decode_grid", "cross", "decode_ablate", rerun_app=True))
    write_link("decode")  # Next / Prev rerun only this fragment: the URL follows the step


step_through(active, text, reference, results, prefix, ablated, ablate_heads)
