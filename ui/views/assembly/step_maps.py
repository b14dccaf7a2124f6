"""The Decode step-through's maps: the map of the step's attention kind (cross-attention where the model has it) up to
the step, the gold alignment and how to read the map beside it, and the grid of the layer's heads."""
from __future__ import annotations

from functools import partial

import streamlit as st

from transformer.charts import ChartTooLargeError, attention_heatmap, attention_panels, window_title
from transformer.data import GoldSource

from ..features import (
    QK_CELL,
    clickable_cells,
    clicked_note,
    grid_key,
    off_panels,
    open_clicked_cell,
    show_alignment_scores,
    show_step_contribution,
    toggle_clicked_head,
)
from ..kit import (
    FIRST_SCREEN_ROWS_PX,
    LINK_OPENS,
    LINK_PARAMS,
    MAP_WIDTH,
    Selection,
    cached_chart,
    chart_heading,
    gold_for,
    grid_cell,
    head_label,
    key_window,
    kind_title,
    map_fit,
    map_kind,
    presenting,
    show_chart,
    slide_downloads,
)

KEYS = LINK_PARAMS["decode"]  # link parameter -> widget key
MAP_SIZE, PRESENTED_MAP_SIZE = 300, 330  # on a projector larger, yet on 1280x720's first screen beside the top-k
Window = tuple[int, int] | None
Alignment = tuple[GoldSource, ...] | None  # the gold alignment, where the task knows it


def map_gold(sel: Selection) -> tuple[Alignment, list[tuple[int, int]]]:
    """(alignment scores, gold cells) of the map, for a model with cross-attention and a task that has them."""
    trace = sel.result.trace
    if not trace.family.has_cross:
        return None, []
    return gold_for(sel.model, sel.text, len(trace.decoder_input_tokens), sel.reference)


def _head_stem(head: int | None) -> str:
    return "mean" if head is None else f"head{head + 1}"


def show_step_map(sel: Selection, gold: list) -> Window:
    """The map's heading and the map, rows up to the step (its row outlined, `gold` cells outlined while switched on),
    a click on a cell opening What made this score; then what each key contributes. Returns the window of keys."""
    result, t, layer, head = sel.result, sel.at, sel.layer, sel.head
    trace = result.trace
    kind, row = map_kind(trace), trace.step_offset + t
    kind_name, named = kind_title(kind), head_label(head, spelled=True).lower()
    keys = key_window(trace, kind, "decode")
    chart_heading(f"{kind_name} rows up to step {t + 1} · layer {layer + 1} · {named}"
                  + ("" if keys is None else window_title(*keys, trace.axis_sizes(kind)[1])))
    heatmap = cached_chart(attention_heatmap, trace, kind, layer, head, max_row=row, highlight_row=row,
                           gold=gold if st.session_state.get(KEYS["gold"], True) else (),
                           title="", large_labels=presenting(), keys=keys,
                           **map_fit(trace, kind, PRESENTED_MAP_SIZE if presenting() else MAP_SIZE, MAP_WIDTH, keys,
                                     presenting=presenting(), rows_px=FIRST_SCREEN_ROWS_PX))
    if head is not None:  # a cell opens What made this score at this step's query
        show_chart(clickable_cells(heatmap), key="decode_heatmap", width="content", selection_mode=QK_CELL,
                   on_select=partial(open_clicked_cell, "decode_heatmap", None, KEYS["qkk"],
                                     LINK_OPENS["decode"]["qkk"]))
    else:
        show_chart(heatmap, key="decode_heatmap", width="content")
    slide_downloads(heatmap, sel.title.lines(f"{kind_name} · layer {layer + 1} · {named} · "
                                             f"rows up to step {t + 1} of {len(result.steps)}"),
                    f"{kind}_layer{layer + 1}_{_head_stem(head)}_step{t + 1}", "decode_heatmap")
    show_step_contribution(sel, row)
    return keys


def show_map_notes(sel: Selection, alignment: Alignment, gold: list[tuple[int, int]]) -> None:
    """Beside the map: the gold alignment's switch and scores (where known), and how to read the map."""
    trace = sel.result.trace
    spec, kind = trace.family, map_kind(trace)
    if gold and alignment is not None:
        st.toggle("Outline the gold alignment", value=True, key=KEYS["gold"],
                  help="The source token each correct output token comes from.")
        show_alignment_scores(trace, alignment, key="decode_alignment")
    query_axis, key_axis = (spec.axis_titles[axis] for axis in spec.axes[kind])
    st.caption(f"Rows are {query_axis} (queries), columns {key_axis} (keys); rows after the current step are "
               "shaded grey and the current step's row is outlined in red.")


def show_heads_grid(sel: Selection, keys: Window) -> None:
    """Every head of the layer (and their mean) up to the step; a click on a head's panel switches it off or on."""
    result, t, layer = sel.result, sel.at, sel.layer
    trace = result.trace
    kind, row = map_kind(trace), trace.step_offset + t
    clicked_note("decode_grid")
    try:
        grid = cached_chart(attention_panels, trace, kind, layers=[layer], max_row=row, keys=keys,
                            cell=grid_cell(trace.n_heads, 150), off=off_panels(sel.ablated, kind), clicks="switch")
    except ChartTooLargeError as exc:
        st.info(str(exc))
        return
    st.caption("Click a head's panel to switch that head off (see ablation, above); a second click: on again. "
               "Pick a head above to see its map large, with its tokens.")
    show_chart(grid, width="content", key=grid_key("decode_grid"), selection_mode="cell",
               on_select=partial(toggle_clicked_head, "decode_grid", kind, KEYS["ablate"], rerun_app=True))
    slide_downloads(grid, sel.title.lines(f"{kind_title(kind)} · layer {layer + 1} · every head · rows up to step "
                                          f"{t + 1} of {len(result.steps)}"),
                    f"{kind}_layer{layer + 1}_heads_step{t + 1}", "decode_grid")
