"""The Decode page's views: the outputs to step through (greedy, with a forced token, teacher-forced), their cards,
and the step-through itself (step, layer and head; the prefix, the top-k, the source shading, the maps)."""
from __future__ import annotations

import re
from dataclasses import replace
from functools import partial
from typing import Callable

import streamlit as st

from transformer.charts import ReplayTooLargeError, check_replay_size, replay_html
from transformer.decode import DecodeResult, InputError
from ui.models import ActiveModel
from ui.server import audience_refusal

from ..features import (
    ablated_run,
    chosen_heads,
    decode_animation,
    head_selection,
    sampled_or_message,
    sampling_controls,
    show_ablated_step,
    show_comparison,
    show_reliance,
    show_sampled_step,
    show_step_attribution,
    show_step_inside,
    show_step_lens,
    show_step_qk,
    show_step_route,
)
from ..kit import (
    LINK_OPENS,
    LINK_PARAMS,
    NEXT_STEP_KEY,
    PREV_STEP_KEY,
    Selection,
    bind_reference,
    bind_text,
    document_selection,
    document_tokens,
    folded_controls,
    greedy,
    greedy_or_message,
    head_keys,
    head_picker,
    layer_picker,
    map_columns,
    map_kind,
    md_token,
    model_text_input,
    page_text,
    presenting,
    share_reference,
    show_chips,
    teacher,
    weights_of,
)
from ..kit import decode_state as ds
from .room_poll import decode_question, show_poll_control
from .step_maps import Alignment, Window, map_gold, show_heads_grid, show_map_notes, show_step_map
from .step_panels import show_prefix_panel, show_source_panel, show_topk_panel

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
    text = page_text(col_text, active, "decode")  # one line, or (a model that reads documents) a box and a file
    n_document = document_tokens(active, text)
    if n_document is not None:  # a document: decoded with the attention store, no step-through
        return document_selection("decode", active, text, n_document)
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
    available = {view: result for view, result in results.items() if result is not None}
    if presenting():
        available = {v: r for v, r in available.items()
                     if v != ds.TEACHER or st.session_state.get(ds.MODE_KEY) == ds.TEACHER}
    for column, (view, result) in zip(st.columns(len(available)), available.items(), strict=True):
        forced = prefix if view == ds.FORCED else None
        with column.container(border=True, key=f"decode_output_{view}"):
            st.markdown(f"**{ds.view_label(view, result)}**")
            show_chips(result.output_tokens, highlight=forced.step if forced is not None else None,
                       caption="predictions at each reference position" if view == ds.TEACHER else "output")
            if forced is not None:
                st.caption(f"‹{md_token(forced.tokens[-1])}› forced at step {forced.step + 1}, then greedy again.")
                st.button("Clear forced token", key="decode_unforce", on_click=ds.clear_forced, icon=":material/close:")
            elif view == ds.GREEDY and not result.finished:
                st.caption("Stopped at the step limit without producing </s>.")
            if view == ds.GREEDY and result.mode == "sampled":
                st.caption("Each token drawn with these settings, not the most probable one; turn sampling off "
                           "for the greedy output.")


def _step_buttons(n_steps: int, t: int, prev_col, next_col) -> None:
    """Prev and Next (keys ← and →) in the two places given."""
    prev_col.button("Prev", key="decode_prev", icon=":material/chevron_left:", on_click=ds.move_step,
                    args=(-1, n_steps), disabled=t == 0, width="stretch", shortcut=PREV_STEP_KEY)
    next_col.button("Next", key="decode_next", icon=":material/chevron_right:", on_click=ds.move_step,
                    args=(1, n_steps), disabled=t == n_steps - 1, width="stretch", shortcut=NEXT_STEP_KEY)


def _pickers(n_steps: int, trace, slider_col, layer_col, head_col) -> tuple[int, int | None]:
    """The step slider, the layer and head pickers in the places given (the head keys under the head picker, but
    in presenter mode: `_presented_step` keeps them out of the folded controls); returns (layer, head)."""
    if n_steps > 1:
        slider_col.slider("Step", min_value=1, max_value=n_steps, key=KEYS["step"])
    else:
        slider_col.caption("The output has a single step.")
    with layer_col:
        layer = layer_picker("Decoder layer", trace.n_layers(map_kind(trace)), KEYS["layer"])
    with head_col:
        head = head_picker("Head", trace.n_heads, KEYS["head"], trace=trace, kind=map_kind(trace))
        if not presenting():
            head_keys(KEYS["head"], trace.n_heads)
    return layer, head


def _step_heading(sel: Selection) -> None:
    step, trace = sel.result.steps[sel.at], sel.result.trace
    fed = trace.decoder_input_tokens[trace.step_offset + sel.at]
    st.subheader(f"Step {sel.at + 1} of {len(sel.result.steps)}: input ‹{md_token(fed)}› → "
                 f"output ‹{md_token(step.token)}› ({step.prob:.1%})", anchor=False)


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


def _controls(sel: Selection, results: Results, view: str) -> Selection:
    """Presenter mode's folded controls: Download replay and the animation, then the step, layer and head pickers
    stacked (Prev and Next left to the first screen): `sel` completed with the output `view` and them."""
    active, result = sel.model, results[view]
    if result is None:
        raise ValueError(f"no {view} output to step through")
    downloads = st.container(horizontal=True, vertical_alignment="center", key="decode_downloads")
    with downloads:
        replay_download(active, result, view)
    n_steps = len(result.steps)
    t = ds.prepare_step(n_steps, (active.task_name, sel.text))
    layer, head = _pickers(n_steps, result.trace, st.container(), st.container(), st.container())
    sel = replace(sel, result=result, mode=view, step=t, layer=layer, head=head, kind=map_kind(result.trace),
                  reference=sel.reference if view == ds.TEACHER else None)
    with downloads:  # beside "Download replay": it follows the layer and head picked below it
        decode_animation(sel)
    return sel


@st.fragment
def show_step_through(sel: Selection, results: Results, ablated: DecodeResult | None, *,
                      prefix: ds.ForcedPrefix | None = None, after: Callable[[], None]) -> None:
    """Everything that follows the step, layer and head: Next, Prev, the slider and the pickers rerun only this
    part of the page (the inputs, the decoding and the sidebar stay as they are); they complete `sel` (the output
    stepped through, its step, layer and head) for the views below. `after` runs last (the page writes its link
    there, so the URL follows the step). In presenter mode the map sits beside the folded step controls, the step's
    heading, Prev and Next, the top-k and the output card (`prefix`: its forced token), all on the first screen of a
    1280x720 projector."""
    if st.session_state.pop(ds.RERUN_APP_KEY, False):
        st.rerun(scope="app")  # a forced token: the outputs above change too
    available = [view for view, result in results.items() if result is not None]
    ds.prepare_view(available)
    if presenting():
        view = _view_picker(results, available)  # (hidden on a projector)
        sel, (alignment, gold, keys) = _presented_step(sel, results, view, prefix)
    else:
        sel, (alignment, gold, keys) = _first_screen_step(sel, results, available, prefix)
    result, t, layer, head = sel.result, sel.at, sel.layer, sel.head
    view = sel.mode
    show_sampled_step(result, t)
    if ablated is not None and view == ds.GREEDY:
        show_ablated_step(ablated, t, layer, head, sel.title, key="decode_ablated_strip")
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
    show_map_notes(sel, alignment, gold)
    show_heads_grid(sel, keys)
    after()


def _view_picker(results: Results, available: list[str]) -> str:
    """Which output to step through (free-running, forced, teacher-forced), where there is more than one."""
    if len(available) == 1:
        return ds.GREEDY
    return st.radio("Step through", available, format_func=lambda v: ds.view_label(v, results[v]), key=KEYS["view"],
                    horizontal=True)


def _first_screen_step(sel: Selection, results: Results, available: list[str], prefix: ds.ForcedPrefix | None
                       ) -> tuple[Selection, tuple[Alignment, list[tuple[int, int]], Window]]:
    """The first screen of a 1280x720 window under the input row: the step's map at the left; at the right which
    output is stepped through, the step's heading, Prev and Next, the step slider, the layer and head pickers and the
    top-k; then the output cards, the prefix, the source shading and the downloads under both. Returns `sel`
    completed (output, step, layer, head) and the map's (alignment, gold, keys)."""
    free = results[ds.GREEDY]
    if free is None:
        raise ValueError("no free-running output to step through")
    map_col, side_col = map_columns(free.trace, map_kind(free.trace), [3, 2])
    active = sel.model
    with side_col:
        view = _view_picker(results, available)
        result = results[view]
        if result is None:
            raise ValueError(f"no {view} output to step through")
        trace, n_steps = result.trace, len(result.steps)
        heading = st.container(key="decode_step_heading")
        t = ds.prepare_step(n_steps, (active.task_name, sel.text))
        _step_buttons(n_steps, t, *st.columns(2))
        slider_col = st.container()
        layer, head = _pickers(n_steps, trace, slider_col, *st.columns([2, 3]))
        sel = replace(sel, result=result, mode=view, step=t, layer=layer, head=head, kind=map_kind(trace),
                      reference=sel.reference if view == ds.TEACHER else None)
        with heading:
            _step_heading(sel)
        show_poll_control(sel, decode_question(sel))  # the poll this session posed (presenter mode poses one)
        show_topk_panel(sel)
    alignment, gold = map_gold(sel)
    with map_col:
        keys = show_step_map(sel, gold)
    show_output_cards(results, prefix)
    show_prefix_panel(sel)
    show_source_panel(sel)
    with st.container(horizontal=True, vertical_alignment="center", key="decode_downloads"):
        replay_download(active, result, view)
        decode_animation(sel)
    return sel, (alignment, gold, keys)


def _presented_step(sel: Selection, results: Results, view: str,
                    prefix: ds.ForcedPrefix | None
                    ) -> tuple[Selection, tuple[Alignment, list[tuple[int, int]], Window]]:
    """Presenter mode's first screen: the map at the left; at the right the folded step controls, the step's
    heading, Prev and Next, the output card and the top-k; the prefix and the source shading under both. Returns
    `sel` completed (step, layer, head) and the map's (alignment, gold, keys)."""
    shown = results[view]
    if shown is None:
        raise ValueError(f"no {view} output to step through")
    trace = shown.trace
    map_col, side_col = map_columns(trace, map_kind(trace), [11, 9], presenting=True)
    with side_col:  # first: the step, layer and head the map shows
        with folded_controls("Step, layer and head", key="decode_step_controls"):
            sel = _controls(sel, results, view)
        _step_heading(sel)
        _step_buttons(len(sel.result.steps), sel.at, *st.columns(2))
        show_output_cards(results, prefix)  # under Prev and Next: on the first screen
        show_topk_panel(sel)
        show_poll_control(sel, decode_question(sel))  # "Poll the room" under the top-k, or the poll posed
        head_keys(KEYS["head"], trace.n_heads)  # H and Shift+H: mounted, out of sight (last: its gap is off-screen)
    alignment, gold = map_gold(sel)
    with map_col:
        keys = show_step_map(sel, gold)
    show_prefix_panel(sel)
    show_source_panel(sel)
    return sel, (alignment, gold, keys)


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
