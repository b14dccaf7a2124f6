"""The Attention page's views: the decode it shows (free-running or teacher-forced), one map large with its
downloads and head statistics, and the model view (every layer x head)."""
from __future__ import annotations

from functools import partial

import streamlit as st

from transformer.analysis import Head, head_stats
from transformer.charts import (
    ChartTooLargeError,
    attention_panels,
    chart_to_png,
    chart_to_svg,
    layers_that_fit,
    selected_panel,
)
from transformer.decode import (
    ALL_TITLES,
    MAX_INPUT_CHARS,
    MEAN_HEAD,
    AttentionTrace,
    DecodeResult,
    InputError,
    head_label,
)
from ui.models import ActiveModel

from .ablation import clicked_note, grid_key, off_panels, toggle_clicked_head
from .alignment import show_alignment_scores
from .inference import bind_reference, gold_for, greedy_or_message, share_reference, teacher
from .presenting import presenting
from .real_size import (
    combined_title,
    key_window,
    large_map,
    map_columns,
    overview_first,
    show_head_overview,
)
from .weights import slide_title
from .widgets import Column, SlideTitle, chart_downloads, grid_cell, show_chart, show_small_table, slide_downloads

MODES = {"greedy": "Free-running (the model's own output)", "teacher": "Teacher-forced (a reference output)"}
GRID_PAGE_FROM = 8  # models deeper than this get a range of layers to draw (every layer that fits, at first)
GRID_CLICKS = {"open": "opens it large above", "ablate": "switches its head off (a second click: back on)"}
STATS_COLUMNS = {"map": Column("layer · head"),
                 "entropy": Column("entropy", "%.3f", "In nats, mean over query rows; 0 = one-hot."),
                 "max_weight": Column("max weight", "%.3f", "Mean of the row maxima."),
                 "diag_distance": Column("diag. dist.", "%.2f", "Mean distance of the weight from the (scaled) "
                                                                "diagonal, in positions.")}


def attention_result(active: ActiveModel, text: str, mode: str) -> tuple[DecodeResult, str | None] | None:
    """The decode the page shows and the reference it was fed (None: free-running); None after a message when there
    is nothing to show (no reference typed yet, a reference the model cannot read, bad input)."""
    if mode != "teacher":
        result = greedy_or_message(active, text)
        return None if result is None else (result, None)
    bind_reference("attention_reference", active, text)
    reference = st.text_input("Reference output", key="attention_reference", on_change=share_reference,
                              args=("attention_reference",), max_chars=MAX_INPUT_CHARS)
    if not reference.strip():
        st.info("Type the reference output the decoder should be fed.", icon=":material/edit_note:")
        return None
    try:
        return teacher(active, text, reference), reference
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None


def show_large_map(active: ActiveModel, text: str, result: DecodeResult, trace: AttentionTrace,
                   reference: str | None, kind: str, layer: int, head: int | None, fixed: bool,
                   combine: str = "pick") -> None:
    """One map large (gold alignment outlined where known; heads combined if asked; a window of keys for a long
    input), its downloads, the kind's head statistics and, for a model with many heads, the head overview first.
    `result` is what the trace download holds (its hidden keys included)."""
    alignment, gold = gold_for(active, text, len(trace.decoder_input_tokens), reference) \
        if kind == trace.family_spec.cross_kind else (None, [])
    title = slide_title(active, text, reference)
    if overview_first(trace, kind):
        show_head_overview(trace, kind, alignment, title)
    map_col, side_col = map_columns(trace, kind, [3, 2])
    with map_col:
        show_gold = bool(gold) and combine == "pick" and st.toggle("Outline the gold alignment", value=True,
                                                                    key="attention_gold")
        keys = key_window(trace, kind, "attention")
        # labels and legend take ~160 px beside the plotting area: at 1400 px the column holds the map whole
        heatmap = large_map(trace, kind, layer, head, combine, fixed_scale=fixed, gold=gold if show_gold else (),
                            size=460 if presenting() else 336, large_labels=presenting(), keys=keys)
        show_chart(heatmap, key="attention_heatmap", width="content")
    with side_col:
        with st.container(key="attention_downloads"):  # hidden as one in presenter mode, heading included
            st.markdown("**Download**")
            stem = (f"{kind}_layer{layer + 1}_{'mean' if head is None else f'head{head + 1}'}" if combine == "pick"
                    else f"{kind}_layer{layer + 1}_{combine}")
            chart_downloads(lambda: chart_to_png(heatmap), lambda: chart_to_svg(heatmap), stem,
                            "attention_heatmap_download")
            slide_downloads(heatmap, title.lines(combined_title(kind, layer, head, combine)), stem,
                            "attention_heatmap")
            st.download_button("Trace (JSON)", data=result.to_json, file_name="attention_trace.json",
                               mime="application/json", key="attention_trace_json", icon=":material/data_object:",
                               on_click="ignore", width="stretch")
        stats = head_stats(trace, kind)
        if overview_first(trace, kind):  # every head is in the overview above; the table has the layer picked
            # (hundreds of table rows took a quarter of a second to draw, bart-large: bench/README.md)
            stats = stats[stats["layer"] == layer].reset_index(drop=True)
            st.markdown(f"**Head statistics · {ALL_TITLES[kind].lower()} · layer {layer + 1}**",
                        help="Every head's statistics are in the head overview above (pick one to colour it by); "
                             "the table lists the layer picked for the large map.")
        else:
            st.markdown(f"**Head statistics · {ALL_TITLES[kind].lower()}**")
        stats.insert(0, "map", [head_label(int(h), int(lay)) for lay, h in zip(stats["layer"], stats["head"])])
        show_small_table(stats, STATS_COLUMNS, key="attention_stats")
        if gold:
            show_alignment_scores(trace, alignment, key="attention_alignment")
    if not overview_first(trace, kind):
        with st.expander("Head overview: every head of this kind in one map", icon=":material/apps:"):
            show_head_overview(trace, kind, alignment, title)


def _open_panel() -> None:
    """Callback of the model view: a clicked panel becomes the large map."""
    panel = selected_panel(st.session_state.get("attention_grid"))
    if panel is not None:
        layer, head = panel
        st.session_state["attention_layer"], st.session_state["attention_head"] = layer, MEAN_HEAD if head is None else head


def _set_grid_layers(key: str, first: int, last: int) -> None:
    """Callback of the model view's buttons: show layers first..last (1-based)."""
    st.session_state[key] = (first, last)


def grid_layers(trace: AttentionTrace, kind: str) -> list[int] | None:
    """The layers the model view draws (0-based): all of them for a model of up to GRID_PAGE_FROM layers, else a
    range the user picks, every layer that fits at first (panels are images: bart-large's 204 draw in a blink),
    all one click away; None (after a message) when not even one layer fits at this input length."""
    n_layers, fit = trace.n_layers(kind), layers_that_fit(trace, kind)
    if fit == 0:
        st.info("This input is too long to draw every head of a layer side by side. Pick a layer and head above to "
                "see one map large.", icon=":material/grid_off:")
        return None
    if n_layers <= GRID_PAGE_FROM and fit >= n_layers:
        return list(range(n_layers))
    key = f"attention_grid_layers_{kind}_{n_layers}"  # its own range per kind and depth: kinds can differ in depth
    st.session_state.setdefault(key, (1, fit))  # a long input: the first layers that fit
    pick, every = st.columns([4, 1], vertical_alignment="bottom")
    first, last = pick.slider(f"Layers (of {n_layers})", 1, n_layers, key=key,
                              help="The grid draws every layer that fits at this input length; narrow the range to "
                                   "look at fewer.")
    every.button(f"All {n_layers} layers", key=f"attention_grid_all_{kind}", width="stretch",
                 on_click=_set_grid_layers, args=(key, 1, n_layers), disabled=(first, last) == (1, n_layers))
    if last - first + 1 > fit:
        st.info(f"Layers {first}–{last} are too many to draw at this input length: {fit} layer(s) at a time fit.",
                icon=":material/grid_view:")
        st.button(f"Show layers {first}–{first + fit - 1}", key=f"attention_grid_fewer_{kind}",
                  on_click=_set_grid_layers, args=(key, first, first + fit - 1))
        return None
    return list(range(first - 1, last))


def show_model_view(trace: AttentionTrace, kind: str, fixed: bool, ablated_heads: list[Head], title: SlideTitle
                    ) -> None:
    """Every layer x head of one kind as panels of one chart (a range of layers at a time for deep models); a click
    opens a panel or switches its head off. What is too big to draw says so and offers fewer layers. `title` names
    model and input on its slide (ui.views.slide_title)."""
    clicks = st.radio("A click on a panel", list(GRID_CLICKS), format_func=GRID_CLICKS.__getitem__, horizontal=True,
                      key="attention_grid_click", help="Double-click clears the selection (when a click opens a panel).")
    clicked_note("attention_grid_ablate")
    layers = grid_layers(trace, kind)
    if layers is None:
        return
    st.caption("Each panel is drawn as an image, so hundreds of heads draw in a blink: hovering names the panel; "
               "open a panel (click it, or pick its layer and head above) for its tokens and weights.")
    try:
        grid = attention_panels(trace, kind, layers=layers, fixed_scale=fixed, cell=grid_cell(trace.n_heads, 130),
                                off=off_panels(ablated_heads, kind), clicks="switch" if clicks == "ablate" else "select")
    except ChartTooLargeError as exc:
        st.info(str(exc))
        return
    if clicks == "ablate":
        show_chart(grid, key=grid_key("attention_grid_ablate"), selection_mode="cell", width="content",
                   on_select=partial(toggle_clicked_head, "attention_grid_ablate", kind, "attention_ablate"))
    else:
        show_chart(grid, key="attention_grid", on_select=_open_panel, selection_mode="cell", width="content")
    with st.columns([2, 3])[0]:
        chart_downloads(lambda: chart_to_png(grid), lambda: chart_to_svg(grid), f"{kind}_all_heads",
                        "attention_grid_download")
    slide_downloads(grid, title.lines(f"{ALL_TITLES[kind]} · every layer × head"), f"{kind}_all_heads",
                    "attention_grid")
