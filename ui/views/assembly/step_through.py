"""The Decode page's views: the outputs to step through (greedy, with a forced token, teacher-forced), their cards,
and the step-through itself (step, layer and head; the prefix, the top-k, the source shading, the maps)."""
from __future__ import annotations

import re
from dataclasses import replace
from functools import partial
from typing import Callable

import streamlit as st

from transformer.charts import (
    ChartTooLargeError,
    ReplayTooLargeError,
    attention_heatmap,
    attention_panels,
    check_replay_size,
    decoder_row_chart,
    replay_html,
    source_strip,
    topk_bars,
    window_title,
)
from transformer.decode import DecodeResult, InputError
from ui.models import ActiveModel
from ui.server import audience_refusal

from ..features import (
    QK_CELL,
    ablated_run,
    chosen_heads,
    clickable_cells,
    clicked_note,
    decode_animation,
    grid_key,
    head_selection,
    off_panels,
    open_clicked_cell,
    sampled_or_message,
    sampling_controls,
    show_ablated_step,
    show_alignment_scores,
    show_comparison,
    show_reliance,
    show_sampled_step,
    show_step_attribution,
    show_step_contribution,
    show_step_inside,
    show_step_lens,
    show_step_qk,
    show_step_route,
    toggle_clicked_head,
)
from ..kit import (
    LINK_OPENS,
    LINK_PARAMS,
    MAP_WIDTH,
    NEXT_STEP_KEY,
    PAGE_PX,
    PREV_STEP_KEY,
    Selection,
    bind_reference,
    bind_text,
    cached_chart,
    chart_heading,
    folded_controls,
    gold_for,
    greedy,
    greedy_or_message,
    grid_cell,
    head_keys,
    head_label,
    head_picker,
    key_window,
    kind_title,
    layer_picker,
    map_columns,
    map_kind,
    md_token,
    model_text_input,
    presenting,
    share_reference,
    share_text,
    show_chart,
    show_chips,
    slide_downloads,
    teacher,
    visible,
    weights_of,
)
from ..kit import decode_state as ds

KEYS = LINK_PARAMS["decode"]  # link parameter -> widget key
Results = dict[str, DecodeResult | None]


def decode_selection(active: ActiveModel) -> Selection | None:
    """The Decode page's top row (the input, the reference, top-k) and sampling settings with the free-running decode
    (greedy or sampled) as a Selection; None after a message when the input cannot be decoded."""
    with folded_controls("Input and settings", key="decode_controls"):  # presenter mode: folded
        return _decode_selection(active)


def _decode_selection(active: ActiveModel) -> Selection | None:
    st.session_state.setdefault(KEYS["topk"], 5)
    bind_text(KEYS["text"], active)
    col_text, col_ref, col_k = st.columns([5, 4, 1])
    text = model_text_input(col_text, active.family.input_role.capitalize(), key=KEYS["text"], on_change=share_text,
                            args=(KEYS["text"],))
    bind_reference(KEYS["ref"], active, text)
    reference = model_text_input(col_ref, "Reference output (for teacher forcing)", key=KEYS["ref"],
                                 on_change=share_reference, args=(KEYS["ref"],),
                                 help="The decoder is fed this target instead of its own output. Leave empty to "
                                      "skip.")
    top_k = col_k.number_input("Top-k", min_value=2, max_value=20, step=1, key=KEYS["topk"])
    sampling = sampling_controls(active)
    free = (greedy_or_message(active, text, top_k=top_k) if sampling is None else
            sampled_or_message(active, text, top_k, sampling))
    if free is None:
        return None
    return Selection("decode", active, text, free, reference if reference.strip() else None, top_k=top_k,
                     sampling=sampling, ablated=chosen_heads(active, KEYS["ablate"]))


def decode_results(sel: Selection) -> tuple[Results, ds.ForcedPrefix | None]:
    """The outputs a user can step through: the free-running one, the one with the forced token (if any) and the
    teacher-forced one (if a reference is given; a reference the model cannot read gets a warning)."""
    active, text, top_k = sel.model, sel.text, sel.top_k
    prefix = ds.forced_prefix(active.task_name, text)
    forced = greedy(active, text, top_k=top_k, forced=prefix.tokens) if prefix is not None else None
    taught = None
    if sel.reference is not None:
        try:
            taught = teacher(active, text, sel.reference, top_k=top_k)
        except InputError as exc:
            st.warning(f"Teacher forcing: {exc}", icon=":material/edit_note:")
    return {ds.GREEDY: sel.result, ds.FORCED: forced, ds.TEACHER: taught}, prefix


def show_output_cards(results: Results, prefix: ds.ForcedPrefix | None) -> None:
    """One card per output (on a projector, the teacher-forced one only while it is being stepped through)."""
    available = [view for view, result in results.items() if result is not None]
    if presenting():
        available = [v for v in available if v != ds.TEACHER or st.session_state.get(ds.MODE_KEY) == ds.TEACHER]
    for column, view in zip(st.columns(len(available)), available, strict=True):
        result = results[view]
        with column.container(border=True):
            st.markdown(f"**{ds.view_label(view, result)}**")
            show_chips(result.output_tokens, highlight=prefix.step if view == ds.FORCED else None,
                       caption="predictions at each reference position" if view == ds.TEACHER else "output")
            if view == ds.FORCED:
                st.caption(f"‹{md_token(prefix.tokens[-1])}› forced at step {prefix.step + 1}, then greedy again.")
                st.button("Clear forced token", key="decode_unforce", on_click=ds.clear_forced, icon=":material/close:")
            elif view == ds.GREEDY and not result.finished:
                st.caption("Stopped at the step limit without producing </s>.")
            if view == ds.GREEDY and result.mode == "sampled":
                st.caption("Each token drawn with these settings, not the most probable one; turn sampling off "
                           "for the greedy output.")


def _navigation(n_steps: int, t: int, trace) -> tuple[int, int | None]:
    """Prev / Next, the step slider, the layer and head pickers; returns (layer, head)."""
    nav_prev, nav_next, nav_slider, nav_layer, nav_head = st.columns([1.8, 1.8, 3.6, 2, 3], vertical_alignment="bottom")
    nav_prev.button("Prev", key="decode_prev", icon=":material/chevron_left:", on_click=ds.move_step,
                    args=(-1, n_steps), disabled=t == 0, width="stretch", shortcut=PREV_STEP_KEY)
    nav_next.button("Next", key="decode_next", icon=":material/chevron_right:", on_click=ds.move_step,
                    args=(1, n_steps), disabled=t == n_steps - 1, width="stretch", shortcut=NEXT_STEP_KEY)
    if n_steps > 1:
        nav_slider.slider("Step", min_value=1, max_value=n_steps, key=KEYS["step"])
    else:
        nav_slider.caption("The output has a single step.")
    with nav_layer:
        layer = layer_picker("Decoder layer", trace.n_layers(map_kind(trace)), KEYS["layer"])
    with nav_head:
        head = head_picker("Head", trace.n_heads, KEYS["head"], trace=trace, kind=map_kind(trace))
        head_keys(KEYS["head"], trace.n_heads)
    return layer, head


def _step_panels(sel: Selection) -> None:
    """The prefix so far and its self-attention, the top-k with "force another token", the source shading."""
    active, text, result, view, t, layer, head, title = (sel.model, sel.text, sel.result, sel.mode, sel.step,
                                                         sel.layer, sel.head, sel.title)
    trace, step = result.trace, result.steps[t]
    spec, row = trace.family, trace.step_offset + t  # the query row of step t
    at = f"layer {layer + 1} · {head_label(head, spelled=True).lower()} · step {t + 1} of {len(result.steps)}"
    left, right = st.columns([3, 2], gap="large")
    with left:
        if view == ds.TEACHER:
            show_chips(trace.decoder_input_tokens, highlight=row, dim_from=row + 1,
                       caption="decoder input: the reference")
        show_chips(result.output_tokens[: t + 1], highlight=t,
                   caption="predictions so far" if view == ds.TEACHER else "output so far")
        self_title = kind_title(spec.decoder_kind)
        self_row = trace.matrix(spec.decoder_kind, layer, head)[row, : row + 1].tolist()
        chart_heading(f"{self_title} of step {t + 1} over the prefix")
        prefix_strip = cached_chart(decoder_row_chart, trace.decoder_input_tokens[: row + 1], self_row,
                                    max_width=420 if spec.has_cross else PAGE_PX, all_tokens=trace.decoder_input_tokens)
        show_chart(prefix_strip, width="content", key="decode_prefix_strip")
        slide_downloads(prefix_strip, title.lines(f"{self_title} over the prefix · {at}"),
                        f"{spec.decoder_kind}_prefix_step{t + 1}", "decode_prefix_strip")
    with right:
        chart_heading(f"Top-{len(step.top_k)} candidates at step {t + 1}")
        top = cached_chart(topk_bars, step.top_k, chosen=step.token, width=200)
        show_chart(top, key="decode_topk", width="content")
        slide_downloads(top, title.lines(f"Top-{len(step.top_k)} candidates · step {t + 1} of {len(result.steps)}"),
                        f"topk_step{t + 1}", "decode_topk")
        alternatives = [tok for tok, _ in step.top_k if tok != step.token]
        if alternatives:
            if st.session_state.get(ds.FORCE_CHOICE_KEY) not in alternatives:
                st.session_state[ds.FORCE_CHOICE_KEY] = alternatives[0]
            pick, go = st.columns([1, 1], vertical_alignment="bottom")
            pick.selectbox("Force another token here", alternatives, format_func=visible, key=ds.FORCE_CHOICE_KEY)
            go.button("Decode on", key="decode_force", icon=":material/call_split:", on_click=ds.force_token,
                      args=(active.task_name, text, result, t), width="stretch",
                      help="Feed this token at this step and let the model decode greedily from there.")
    if spec.cross_kind is None:
        return  # no separate source: the prefix strip above is the step's whole row, the prompt included
    cross_row = trace.matrix(spec.cross_kind, layer, head)[row].tolist()
    chart_heading(f"Source tokens shaded by the attention of step {t + 1} · layer {layer + 1} · "
                  f"{head_label(head, spelled=True).lower()}")
    strip = cached_chart(source_strip, trace.source_tokens, cross_row, max_width=PAGE_PX)
    show_chart(strip, width="content", key="decode_source_strip")
    slide_downloads(strip, title.lines(f"Source tokens shaded by {kind_title(spec.cross_kind).lower()} · {at}"),
                    f"{spec.cross_kind}_source_step{t + 1}", "decode_source_strip")


def _maps(sel: Selection) -> None:
    """The cross-attention map up to the step (gold alignment outlined where known) and the layer's heads grid."""
    active, text, result, t, layer, head, title = (sel.model, sel.text, sel.result, sel.step, sel.layer, sel.head,
                                                   sel.title)
    trace = result.trace
    spec, kind, row = trace.family, map_kind(trace), trace.step_offset + t
    alignment, gold = gold_for(active, text, len(trace.decoder_input_tokens), sel.reference) \
        if spec.has_cross else (None, [])
    kind_name = kind_title(kind)
    # the map with its labels and legend is ~size + 150 px wide: at 1400 px the half-width column clipped its legend;
    # a long input's map takes the page's width (the side column goes below) and shows a window of keys
    map_col, side_col = map_columns(trace, kind, [9, 6])
    with map_col:
        keys = key_window(trace, kind, "decode")
        named = head_label(head, spelled=True).lower()
        chart_heading(f"{kind_name} rows up to step {t + 1} · layer {layer + 1} · {named}"
                      + ("" if keys is None else window_title(*keys, trace.axis_sizes(kind)[1])))
        heatmap = cached_chart(attention_heatmap, trace, kind, layer, head, max_row=row, highlight_row=row,
                               gold=gold if st.session_state.get(KEYS["gold"], True) else (),
                               size=440 if presenting() else 300, title="", large_labels=presenting(), keys=keys,
                               max_width=MAP_WIDTH)
        if head is not None:  # a cell opens What made this score at this step's query
            show_chart(clickable_cells(heatmap), key="decode_heatmap", width="content", selection_mode=QK_CELL,
                       on_select=partial(open_clicked_cell, "decode_heatmap", None, KEYS["qkk"],
                                         LINK_OPENS["decode"]["qkk"]))
        else:
            show_chart(heatmap, key="decode_heatmap", width="content")
        slide_downloads(heatmap, title.lines(f"{kind_name} · layer {layer + 1} · {named} · "
                                             f"rows up to step {t + 1} of {len(result.steps)}"),
                        f"{kind}_layer{layer + 1}_{_head_stem(head)}_step{t + 1}", "decode_heatmap")
        show_step_contribution(sel, row)
    with side_col:
        if gold:
            st.toggle("Outline the gold alignment", value=True, key=KEYS["gold"],
                      help="The source token each correct output token comes from.")
            show_alignment_scores(trace, alignment, key="decode_alignment")
        query_axis, key_axis = (spec.axis_titles[axis] for axis in spec.axes[kind])
        st.caption(f"Rows are {query_axis} (queries), columns {key_axis} (keys); rows after the current step are "
                   "shaded grey and the current step's row is outlined in red.")
    clicked_note("decode_grid")
    try:
        grid = cached_chart(attention_panels, trace, kind, layers=[layer], max_row=row, keys=keys,
                            cell=grid_cell(trace.n_heads, 150), off=off_panels(sel.ablated, kind), clicks="switch")
    except ChartTooLargeError as exc:
        st.info(str(exc))
    else:
        st.caption("Click a head's panel to switch that head off (see ablation, above); a second click: on again. "
                   "Pick a head above to see its map large, with its tokens.")
        show_chart(grid, width="content", key=grid_key("decode_grid"), selection_mode="cell",
                   on_select=partial(toggle_clicked_head, "decode_grid", kind, KEYS["ablate"], rerun_app=True))
        slide_downloads(grid, title.lines(f"{kind_name} · layer {layer + 1} · every head · rows up to step "
                                          f"{t + 1} of {len(result.steps)}"),
                        f"{kind}_layer{layer + 1}_heads_step{t + 1}", "decode_grid")


def _head_stem(head: int | None) -> str:
    return "mean" if head is None else f"head{head + 1}"


def replay_download(active: ActiveModel, result: DecodeResult, view: str) -> None:
    """"Download replay": one HTML file that replays this decode step by step offline, made only when clicked; a
    decode too long or too big for one file gets a caption naming the limit instead."""
    try:
        check_replay_size(result)
    except ReplayTooLargeError as exc:
        st.caption(f"No replay file for this decode: {exc}")
        return
    name = active.option.label.replace("  ·  ", " · ")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", active.option.name)  # a Hugging Face name holds a slash
    why = audience_refusal("render")  # the speaker's machine would build it: switched off for the audience
    st.download_button("Download replay", data=b"" if why else partial(replay_html, result, name, weights_of(active)),
                       file_name=f"replay_{stem}_{view}.html", mime="text/html", key="decode_replay",
                       icon=":material/play_circle:", on_click="ignore", disabled=bool(why),
                       help=why or "One HTML file that replays this decode step by step, offline: Next / Prev or the "
                                   "arrow keys, every attention kind, layer and head, the top-k of each step.")


@st.fragment
def show_step_through(sel: Selection, results: Results, ablated: DecodeResult | None, *,
                      after: Callable[[], None]) -> None:
    """Everything that follows the step, layer and head: Next, Prev, the slider and the pickers rerun only this
    part of the page (the inputs, the decoding and the sidebar stay as they are); they complete `sel` (the output
    stepped through, its step, layer and head) for the views below. `after` runs last (the page writes its link
    there, so the URL follows the step)."""
    if st.session_state.pop(ds.RERUN_APP_KEY, False):
        st.rerun(scope="app")  # a forced token: the outputs above change too
    active, text = sel.model, sel.text
    available = [view for view, result in results.items() if result is not None]
    ds.prepare_view(available)
    view = st.radio("Step through", available, format_func=lambda v: ds.view_label(v, results[v]), key=KEYS["view"],
                    horizontal=True) if len(available) > 1 else ds.GREEDY
    result = results[view]
    downloads = st.container(horizontal=True, vertical_alignment="center", key="decode_downloads")
    with downloads:
        replay_download(active, result, view)
    n_steps = len(result.steps)
    t = ds.prepare_step(n_steps, (active.task_name, text))
    layer, head = _navigation(n_steps, t, result.trace)
    sel = replace(sel, result=result, mode=view, step=t, layer=layer, head=head, kind=map_kind(result.trace),
                  reference=sel.reference if view == ds.TEACHER else None)
    step = result.steps[t]
    fed = result.trace.decoder_input_tokens[result.trace.step_offset + t]
    st.subheader(f"Step {t + 1} of {n_steps}: input ‹{md_token(fed)}› → "
                 f"output ‹{md_token(step.token)}› ({step.prob:.1%})", anchor=False)
    title = sel.title
    with downloads:  # beside "Download replay": it follows the layer and head picked below it
        decode_animation(sel)
    _step_panels(sel)
    show_sampled_step(result, t)
    if ablated is not None and view == ds.GREEDY:
        show_ablated_step(ablated, t, layer, head, title, key="decode_ablated_strip")
    if view != ds.TEACHER:  # attribution explains the model's own choices
        with st.expander("Attribution: what the chosen token depends on", key="decode_attr_open",
                         on_change="rerun", icon=":material/insights:") as attribution:
            if attribution.open:  # computed (Integrated Gradients) and drawn only while the expander is open
                show_step_attribution(sel, key="decode_attr")
    show_step_lens(sel)
    show_step_inside(sel)
    show_step_qk(sel, LINK_OPENS["decode"]["qkk"], KEYS["qkk"])
    show_step_route(sel, LINK_OPENS["decode"]["tau"], KEYS["tau"],
                    (LINK_OPENS["decode"]["inside"], KEYS["inside"], KEYS["layer"], KEYS["head"]))
    show_reliance(sel, "decode_reliance_open")
    st.divider()
    _maps(sel)
    after()


def show_ablation_panel(sel: Selection) -> DecodeResult | None:
    """"Switch heads off": the picker, and the ablated output beside the intact one; returns the ablated result or
    None. On a projector only while heads are switched off."""
    if presenting() and not st.session_state.get(KEYS["ablate"]):
        return None
    with st.expander("Switch heads off (ablation)", expanded=bool(st.session_state.get(KEYS["ablate"]))):
        heads = head_selection(sel.model, KEYS["ablate"])
        ablated = ablated_run(sel.model, sel.text, heads, top_k=sel.top_k)
        if ablated is not None:
            show_comparison(sel.result, ablated, heads, key="decode_ablation")
    return ablated
