"""The Attention page's views: the decode it shows (free-running or teacher-forced), one map large with its
downloads and head statistics, and the model view (every layer x head)."""
from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import cast

import streamlit as st

from transformer.analysis import attention_source, head_stats
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
    MEAN_HEAD,
    AttentionTrace,
    DecodeResult,
    InputError,
    head_label,
    hide_tokens,
    merge_words,
)
from ui.models import ActiveModel

from ..features import (
    MAP_VALUES,
    QK_CELL,
    chosen_heads,
    clickable_cells,
    clicked_note,
    grid_key,
    latest_corpus_statistics,
    off_panels,
    open_clicked_cell,
    show_alignment_scores,
    show_map_overview,
    toggle_clicked_head,
)
from ..kit import (
    COMBINE,
    LINK_PARAMS,
    MAP_WIDTH,
    Column,
    Selection,
    bind_reference,
    bind_text,
    bring_into_view,
    chart_downloads,
    combine_options,
    combined_title,
    document_selection,
    document_tokens,
    folded_controls,
    gold_for,
    greedy_or_message,
    grid_cell,
    head_keys,
    head_picker,
    key_window,
    kind_picker,
    large_map,
    layer_picker,
    map_columns,
    map_fit,
    md,
    model_text_input,
    overview_first,
    page_text,
    presenting,
    share_reference,
    show_chart,
    show_head_overview,
    show_small_table,
    slide_downloads,
    teacher,
)
from .masked import masked_attention_result, segment_choice
from .room_poll import attention_question, show_poll_control

KEYS = LINK_PARAMS["attention"]  # link parameter -> widget key
MODES = {"greedy": "Free-running (the model's own output)", "teacher": "Teacher-forced (a reference output)"}
GRID_PAGE_FROM = 8  # models deeper than this get a range of layers to draw (every layer that fits, at first)
PRESENTED_MAP_SIZE = 320  # on a projector: larger labels, yet the map's last rows on 1280x720's first screen
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
    bind_reference(KEYS["ref"], active, text)
    reference = model_text_input(st, "Reference output", key=KEYS["ref"], on_change=share_reference,
                                 args=(KEYS["ref"],))
    if not reference.strip():
        st.info("Type the reference output the decoder should be fed.", icon=":material/edit_note:")
        return None
    try:
        return teacher(active, text, reference), reference
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None


def attention_selection(active: ActiveModel) -> Selection | None:
    """The Attention page's widget row, top to bottom (the input, decoder input, a pair's segment, merged words,
    hidden sinks, kind, layer, head, combine, scale, what the map shows) as one Selection; None after a message
    when there is nothing to show."""
    with folded_controls("Input and pickers", key="attention_controls", keys=True):  # presenter mode: folded
        return _attention_selection(active)


def _attention_selection(active: ActiveModel) -> Selection | None:
    bind_text(KEYS["text"], active)
    col_text, col_mode = st.columns([3, 2])
    text = page_text(col_text, active, "attention")  # one line, or (a model that reads documents) a box and a file
    n_document = document_tokens(active, text)
    if n_document is not None:  # a document: decoded free-running with the attention store
        return document_selection("attention", active, text, n_document)
    st.session_state.setdefault(KEYS["mode"], "greedy")
    mode, second = "greedy", ""
    if active.family.decodes:
        mode = col_mode.radio("Decoder input", list(MODES), format_func=MODES.__getitem__, key=KEYS["mode"])
        shown = attention_result(active, text, mode)
    else:  # an encoder-only model: one forward pass over one sentence or a pair
        shown = masked_attention_result(active, text, col_mode, key=KEYS["pair"])
        second = shown[1] if shown is not None else ""
        shown = (shown[0], None) if shown is not None else None
    if shown is None:
        return None
    result, reference = shown
    trace = segment_choice(active, text, second, result.trace, key=KEYS["segment"])  # a pair's segment filter
    subword = active.level not in ("char", "word")  # merging pieces means nothing for characters or whole words
    col_text.caption(f"Output: **{md(result.output_text.strip()) or '(empty)'}**" + (
        "" if result.finished or reference is not None else " (stopped at the step limit)"))
    # the pickers in three short rows (the kind and what the map shows, then layer, head and how heads combine, then
    # the switches), so the map's top is on a 1280x720 first screen
    kind_row, c_shows = st.columns([7, 3], vertical_alignment="bottom")
    c_layer, c_head, c_combine = st.columns([2, 3, 4], vertical_alignment="bottom")
    switches = st.columns([4, 5, 3] if subword else [5, 3], vertical_alignment="center")
    c_hide, c_opts = switches[-2:]
    merged = subword and switches[0].toggle(
        "Merge pieces into words", key=KEYS["words"],
        help="Keys are summed within a word and queries averaged within a word, so every row still sums to 1. A piece "
             "starting with ▁ or Ġ (or a special token) starts a word. The trace download keeps the pieces.")
    if merged:
        trace = merge_words(trace)
    st.session_state.setdefault(KEYS["hide"], False)
    hide = c_hide.toggle("Hide the first token and specials", key=KEYS["hide"],
                         help="Long inputs and large models pour most attention onto the first token and specials "
                              "(attention sinks). Hidden, they are taken off the key axis and each row is renormalised "
                              "to sum to 1; the map says so, and the trace download records it.")
    if hide:
        trace = hide_tokens(trace)
    with kind_row:
        kind = kind_picker("Attention", KEYS["kind"], trace)
    with c_layer:
        layer = layer_picker("Layer", trace.n_layers(kind), KEYS["layer"])
    with c_head:
        head = head_picker("Head", trace.n_heads, KEYS["head"], trace=trace, kind=kind)
        head_keys(KEYS["head"], trace.n_heads)
    with c_combine:  # beside the head: the picker row keeps its width at 1400 px
        combines = combine_options(trace, kind)
        if st.session_state.get(KEYS["combine"]) not in combines:
            st.session_state[KEYS["combine"]] = "pick"
        combine = st.selectbox("Combine heads", combines, format_func=COMBINE.__getitem__, key=KEYS["combine"],
                               help="Max over heads: each cell's largest weight. Rollout (Abnar & Zuidema 2020): "
                                    "attention composed across layers up to this one, with the residual added; for "
                                    "cross-attention, the output's attention to the source through the encoder. Mean "
                                    "within the key/value group (grouped-query models): the mean of the query heads "
                                    "sharing the picked head's keys and values.")
    with c_opts:
        st.session_state.setdefault(KEYS["fixed"], True)
        fixed = st.toggle("Fixed scale", key=KEYS["fixed"],
                          help="Colours fixed at 0–1; off: from the map's lowest to its highest weight.")
    st.session_state.setdefault(KEYS["show"], "weight")
    shows = c_shows.segmented_control("Map shows", list(MAP_VALUES), format_func=MAP_VALUES.__getitem__,
                                      key=KEYS["show"],
                                      help="Weight: the softmax's α. Contribution: ‖α_ij · W_O^h v_j‖, what each key "
                                           "adds to the head's output (Kobayashi et al. 2020); for the mean of heads, "
                                           "the norm of the mean of the heads' vectors. Max, rollout and group means "
                                           "stay weight-only.")
    return Selection("attention", active, text, result, reference, mode, trace, kind=kind, layer=layer, head=head,
                     ablated=chosen_heads(active, KEYS["ablate"]), combine=combine, shows=shows or "weight",
                     fixed_scale=fixed,
                     hide_sinks=hide, merge_words=bool(merged), second=second,
                     segment=(st.session_state.get(KEYS["segment"]) or "all") if second.strip() else "all")


def show_large_map(sel: Selection) -> None:
    """One map large (gold alignment outlined where known; heads combined if asked; a window of keys for a long
    input), its downloads, the kind's head statistics and, for a model with many heads, the head overview first.
    The trace download holds the decode per token (its hidden keys taken off when the map hides them). When the maps
    would be too big (a document's decode kept the attention store): the overview and the exact zoom."""
    if not attention_source(sel.result.trace).holds_maps:
        show_map_overview(sel)
        return
    active, text, trace, reference = sel.model, sel.text, sel.maps, sel.reference
    kind, layer, head, combine = sel.kind, sel.layer, sel.head, sel.combine
    result = replace(sel.result, trace=hide_tokens(sel.result.trace)) if sel.hide_sinks else sel.result
    alignment, gold = gold_for(active, text, len(trace.decoder_input_tokens), reference) \
        if kind == trace.family.cross_kind else (None, [])
    title = sel.title
    if overview_first(trace, kind):
        show_head_overview(trace, kind, alignment, title, latest_corpus_statistics(active))
    map_col, side_col = map_columns(trace, kind, [3, 2], presenting=presenting())
    with side_col:  # the switch beside the map, not above it: the map's top on a 1280x720 first screen
        show_gold = bool(gold) and combine == "pick" and st.toggle("Outline the gold alignment", value=True,
                                                                    key=KEYS["gold"])
        show_poll_control(sel, attention_question(sel))  # "Poll the room" (presenter mode), or the poll posed
    with map_col:
        keys = key_window(trace, kind, "attention")
        # labels and legend take ~160 px beside the plotting area: at 1400 px the column holds the map whole; on a
        # projector (1280x720) the map with its axis title fits the first screen under the folded controls and the
        # gold toggle (its rows end above y=720)
        # (its size fitted to its column with its token labels and legend, and on a projector to the screen's height)
        heatmap = large_map(trace, kind, layer, head, combine, fixed_scale=sel.fixed_scale,
                            gold=gold if show_gold else (), large_labels=presenting(), keys=keys,
                            **map_fit(trace, kind, PRESENTED_MAP_SIZE if presenting() else 300, MAP_WIDTH, keys,
                                      presenting=presenting()))
        with st.container(key="attention_map"):  # (a chart's own key names it only where it takes clicks)
            if combine == "pick" and head is not None and sel.maps is sel.result.trace:  # a cell: What made this score
                show_chart(clickable_cells(heatmap), key="attention_heatmap", width="content", selection_mode=QK_CELL,
                           on_select=partial(open_clicked_cell, "attention_heatmap", KEYS["qkq"], KEYS["qkk"],
                                             sel.key("qk_open")))
            else:
                show_chart(heatmap, key="attention_heatmap", width="content")
        if st.session_state.get(KEYS["focus"]) == "map":  # an example link: the map it promises on screen
            bring_into_view("attention_map")
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
        stats.insert(0, "map", [head_label(int(h), int(lay))
                                for lay, h in zip(stats["layer"], stats["head"], strict=True)])
        show_small_table(stats, STATS_COLUMNS, key="attention_stats")
        if gold and alignment is not None:
            show_alignment_scores(trace, alignment, key="attention_alignment")
    if not overview_first(trace, kind):
        with st.expander("Head overview: every head of this kind in one map", icon=":material/apps:"):
            show_head_overview(trace, kind, alignment, title, latest_corpus_statistics(active))


def _open_panel() -> None:
    """Callback of the model view: a clicked panel becomes the large map."""
    panel = selected_panel(st.session_state.get("attention_grid"))
    if panel is not None:
        layer, head = panel
        st.session_state[KEYS["layer"]], st.session_state[KEYS["head"]] = layer, MEAN_HEAD if head is None else head


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
    # a range slider: its value in session state is a pair, which the stubs' overloads cannot see from `key`
    first, last = cast(tuple[int, int], pick.slider(
        f"Layers (of {n_layers})", 1, n_layers, key=key,
        help="The grid draws every layer that fits at this input length; narrow the range to look at fewer."))
    every.button(f"All {n_layers} layers", key=f"attention_grid_all_{kind}", width="stretch",
                 on_click=_set_grid_layers, args=(key, 1, n_layers), disabled=(first, last) == (1, n_layers))
    if last - first + 1 > fit:
        st.info(f"Layers {first}–{last} are too many to draw at this input length: {fit} layer(s) at a time fit.",
                icon=":material/grid_view:")
        st.button(f"Show layers {first}–{first + fit - 1}", key=f"attention_grid_fewer_{kind}",
                  on_click=_set_grid_layers, args=(key, first, first + fit - 1))
        return None
    return list(range(first - 1, last))


def show_model_view(sel: Selection) -> None:
    """Every layer x head of the picked kind as panels of one chart (a range of layers at a time for deep models); a
    click opens a panel or switches its head off (the heads switched off are marked). What is too big to draw says
    so and offers fewer layers."""
    trace, kind, title = sel.maps, sel.kind, sel.title
    clicks = st.radio("A click on a panel", list(GRID_CLICKS), format_func=GRID_CLICKS.__getitem__, horizontal=True,
                      key="attention_grid_click",
                      help="Double-click clears the selection (when a click opens a panel).")
    clicked_note("attention_grid_ablate")
    layers = grid_layers(trace, kind)
    if layers is None:
        return
    st.caption("Each panel is drawn as an image, so hundreds of heads draw in a blink: hovering names the panel; "
               "open a panel (click it, or pick its layer and head above) for its tokens and weights.")
    try:
        grid = attention_panels(trace, kind, layers=layers, fixed_scale=sel.fixed_scale,
                                cell=grid_cell(trace.n_heads, 130), off=off_panels(sel.ablated, kind),
                                clicks="switch" if clicks == "ablate" else "select")
    except ChartTooLargeError as exc:
        st.info(str(exc))
        return
    if clicks == "ablate":
        show_chart(grid, key=grid_key("attention_grid_ablate"), selection_mode="cell", width="content",
                   on_select=partial(toggle_clicked_head, "attention_grid_ablate", kind, KEYS["ablate"]))
    else:
        show_chart(grid, key="attention_grid", on_select=_open_panel, selection_mode="cell", width="content")
    with st.columns([2, 3])[0]:
        chart_downloads(lambda: chart_to_png(grid), lambda: chart_to_svg(grid), f"{kind}_all_heads",
                        "attention_grid_download")
    slide_downloads(grid, title.lines(f"{ALL_TITLES[kind]} · every layer × head"), f"{kind}_all_heads",
                    "attention_grid")
