"""The Attention page's views: the decode it shows (free-running or teacher-forced), one map large with its
downloads and head statistics, and the model view (every layer x head)."""
from __future__ import annotations

from functools import partial

import streamlit as st

from transformer.analysis import Head, head_stats
from transformer.charts import (
    ChartTooLargeError,
    attention_grid,
    attention_heatmap,
    chart_to_png,
    chart_to_svg,
    selected_panel,
)
from transformer.decode import (
    KIND_TITLES,
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
from .widgets import Column, chart_downloads, grid_cell, show_chart, show_small_table

MODES = {"greedy": "Free-running (the model's own output)", "teacher": "Teacher-forced (a reference output)"}
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
                   reference: str | None, kind: str, layer: int, head: int | None, fixed: bool) -> None:
    """One map large (gold alignment outlined where known), its downloads, the kind's head statistics."""
    alignment, gold = gold_for(active, text, len(trace.decoder_input_tokens), reference) if kind == "cross" \
        else (None, [])
    map_col, side_col = st.columns([3, 2], gap="large")
    with map_col:
        show_gold = bool(gold) and st.toggle("Outline the gold alignment", value=True, key="attention_gold")
        # labels and legend take ~160 px beside the map: at 1400 px wide this fills the column without clipping
        heatmap = attention_heatmap(trace, kind, layer, head, fixed_scale=fixed, gold=gold if show_gold else (),
                                    size=460 if presenting() else 336, large_labels=presenting())
        show_chart(heatmap, key="attention_heatmap", width="content")
    with side_col:
        with st.container(key="attention_downloads"):  # hidden as one in presenter mode, heading included
            st.markdown("**Download**")
            stem = f"{kind}_layer{layer + 1}_{'mean' if head is None else f'head{head + 1}'}"
            chart_downloads(lambda: chart_to_png(heatmap), lambda: chart_to_svg(heatmap), stem,
                            "attention_heatmap_download")
            st.download_button("Trace (JSON)", data=result.to_json, file_name="attention_trace.json",
                               mime="application/json", key="attention_trace_json", icon=":material/data_object:",
                               on_click="ignore", width="stretch")
        st.markdown(f"**Head statistics · {KIND_TITLES[kind].lower()}**")
        stats = head_stats(trace, kind)
        stats.insert(0, "map", [head_label(int(h), int(lay)) for lay, h in zip(stats["layer"], stats["head"])])
        show_small_table(stats, STATS_COLUMNS, key="attention_stats")
        if gold:
            show_alignment_scores(trace, alignment, key="attention_alignment")


def _open_panel() -> None:
    """Callback of the model view: a clicked panel becomes the large map."""
    panel = selected_panel(st.session_state.get("attention_grid"))
    if panel is not None:
        layer, head = panel
        st.session_state["attention_layer"], st.session_state["attention_head"] = layer, MEAN_HEAD if head is None else head


def show_model_view(trace: AttentionTrace, kind: str, fixed: bool, ablated_heads: list[Head]) -> None:
    """Every layer x head of one kind as small multiples; a click opens a panel or switches its head off. A grid
    too big to draw says so."""
    clicks = st.radio("A click on a panel", list(GRID_CLICKS), format_func=GRID_CLICKS.__getitem__, horizontal=True,
                      key="attention_grid_click", help="Double-click clears the selection (when a click opens a panel).")
    clicked_note("attention_grid_ablate")
    try:
        grid = attention_grid(trace, kind, fixed_scale=fixed, cell=grid_cell(trace.n_heads, 130),
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
