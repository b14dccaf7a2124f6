"""Attention explorer: any kind, layer and head (or their mean) for one input, the model view and head statistics."""
from functools import partial

import streamlit as st

from transformer.analysis import head_stats
from transformer.charts import (
    ChartTooLargeError,
    attention_grid,
    attention_heatmap,
    chart_to_png,
    chart_to_svg,
    selected_panel,
)
from transformer.decode import KIND_TITLES, MAX_INPUT_CHARS, MEAN_HEAD, InputError, head_label, merge_words
from ui.links import head_keys, merged_words, presenting
from ui.shell import ensure_frame
from ui.views import (
    Column,
    attention_ablation,
    bind_reference,
    bind_text,
    chart_downloads,
    clicked_note,
    current_output,
    gold_alignment_for,
    gold_cells,
    greedy_or_message,
    grid_cell,
    grid_key,
    head_picker,
    kind_picker,
    layer_picker,
    md,
    off_panels,
    reference_for,
    require_model,
    share_reference,
    share_text,
    show_agreement,
    show_alignment_scores,
    show_chart,
    show_small_table,
    show_sweep,
    show_weights,
    teacher,
    toggle_clicked_head,
)

GRID_CLICKS = {"open": "opens it large above", "ablate": "switches its head off (a second click: back on)"}
STATS_COLUMNS = {"map": Column("layer · head"),
                 "entropy": Column("entropy", "%.3f", "In nats, mean over query rows; 0 = one-hot."),
                 "max_weight": Column("max weight", "%.3f", "Mean of the row maxima."),
                 "diag_distance": Column("diag. dist.", "%.2f", "Mean distance of the weight from the (scaled) "
                                                                "diagonal, in positions.")}
MODES = {"greedy": "Free-running (the model's own output)", "teacher": "Teacher-forced (a reference output)"}


def open_panel() -> None:
    """Callback of the model view: a clicked panel becomes the large map."""
    panel = selected_panel(st.session_state.get("attention_grid"))
    if panel is not None:
        layer, head = panel
        st.session_state["attention_layer"], st.session_state["attention_head"] = layer, MEAN_HEAD if head is None else head


ensure_frame()
active = require_model()
st.title("Attention explorer", anchor=False)
st.caption("Every attention map for one input. Rows are queries and columns keys; tokens are indexed by position, "
           "so repeated tokens stay apart. Maps come from the model in eval mode, on the tokens it actually saw.")
show_weights(active)

bind_text("attention_text", active)
col_text, col_mode = st.columns([3, 2])
text = col_text.text_input("Input", key="attention_text", on_change=share_text, args=("attention_text",),
                           max_chars=MAX_INPUT_CHARS)
st.session_state.setdefault("attention_mode", "greedy")
mode = col_mode.radio("Decoder input", list(MODES), format_func=MODES.__getitem__, key="attention_mode")
reference = ""
if mode == "teacher":
    bind_reference("attention_reference", active, text)
    reference = st.text_input("Reference output", key="attention_reference", on_change=share_reference,
                              args=("attention_reference",), max_chars=MAX_INPUT_CHARS)
    if not reference.strip():
        st.info("Type the reference output the decoder should be fed.", icon=":material/edit_note:")
        st.stop()
    try:
        result = teacher(active, text, reference)
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        st.stop()
else:
    result = greedy_or_message(active, text)
    if result is None:
        st.stop()
trace = pieces = result.trace  # `pieces` stays per token: attribution (and so agreement) is per piece
if (asked := merged_words()) is not None:  # a shared link's choice (issue 12)
    st.session_state.setdefault("attention_merge_words", asked)
subword = active.level not in ("char", "word")  # merging pieces means nothing for characters or whole words
if subword and st.toggle("Merge subword pieces into words", key="attention_merge_words",
                         help="Keys are summed within a word and queries averaged within a word, so every row still "
                              "sums to 1. A piece starting with ▁ or Ġ (or a special token) starts a word. The trace "
                              "download keeps the pieces."):
    trace = merge_words(trace)
st.caption(f"Output: **{md(result.output_text) or '(empty)'}**" + ("" if result.finished or mode == "teacher"
                                                               else " (stopped at the step limit)"))

c_kind, c_layer, c_head, c_opts = st.columns([5, 2, 2, 2], vertical_alignment="bottom")
with c_kind:
    kind = kind_picker("Attention", "attention_kind")
with c_layer:
    layer = layer_picker("Layer", trace.n_layers(kind), "attention_layer")
with c_head:
    head = head_picker("Head", trace.n_heads, "attention_head")
    head_keys("attention_head", trace.n_heads)
with c_opts:
    st.session_state.setdefault("attention_fixed_scale", True)
    fixed = st.toggle("Fixed scale", key="attention_fixed_scale",
                      help="Colours fixed at 0–1; off: from the map's lowest to its highest weight.")
alignment = gold_alignment_for(active, text) if kind == "cross" else None
if mode == "teacher" and reference.strip() != reference_for(active, text):
    alignment = None  # the gold alignment belongs to the correct output, not to an arbitrary reference
gold = gold_cells(alignment, len(trace.decoder_input_tokens))

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

st.subheader("Switch heads off", anchor=False)
ablated_heads = attention_ablation(active, text, result, reference if mode == "teacher" else None, kind, layer, head,
                                   fixed_scale=fixed)

st.subheader("Model view: every layer × head", anchor=False)
clicks = st.radio("A click on a panel", list(GRID_CLICKS), format_func=GRID_CLICKS.__getitem__, horizontal=True,
                  key="attention_grid_click", help="Double-click clears the selection (when a click opens a panel).")
clicked_note("attention_grid_ablate")
try:
    grid = attention_grid(trace, kind, fixed_scale=fixed, cell=grid_cell(trace.n_heads, 130),
                          off=off_panels(ablated_heads, kind), clicks="switch" if clicks == "ablate" else "select")
except ChartTooLargeError as exc:
    st.info(str(exc))
else:
    if clicks == "ablate":
        show_chart(grid, key=grid_key("attention_grid_ablate"), selection_mode="cell", width="content",
                   on_select=partial(toggle_clicked_head, "attention_grid_ablate", kind, "attention_ablate"))
    else:
        show_chart(grid, key="attention_grid", on_select=open_panel, selection_mode="cell", width="content")
    with st.columns([2, 3])[0]:
        chart_downloads(lambda: chart_to_png(grid), lambda: chart_to_svg(grid), f"{kind}_all_heads",
                        "attention_grid_download")

output = current_output(active, result, reference if mode == "teacher" else None)
st.subheader("Which heads matter? Ablate each head in turn", anchor=False)
show_sweep(active, text, output, result.output_text if mode != "teacher" else reference, key="attention_sweep")
st.subheader("Does attention agree with attribution?", anchor=False)
show_agreement(active, text, output, pieces, key="attention_agreement", merged=pieces is not trace)
