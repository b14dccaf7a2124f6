"""Compare: one input through two models, outputs aligned step by step, the same map of both and their difference."""
import streamlit as st

from transformer.analysis import attention_difference
from transformer.charts import attention_heatmap, difference_heatmap
from transformer.decode import KIND_TITLES, MAX_INPUT_CHARS, InputError
from ui.shell import ensure_frame
from ui.views import (
    Column,
    bind_text,
    chart_heading,
    divergence_message,
    greedy,
    greedy_or_message,
    head_keys,
    head_label,
    head_picker,
    kind_picker,
    layer_picker,
    model_caption,
    pick_model_b,
    require_model,
    share_text,
    show_chart,
    show_chips,
    show_small_table,
    step_caption,
    step_picker,
    step_table,
)

STEP_COLUMNS = {"step": Column("step", "%d"), "A": Column("A token"),
                "A prob": Column("A prob", "%.3f", "Model A's probability of its token at this step."),
                "B": Column("B token"), "B prob": Column("B prob", "%.3f", "Model B's probability of its token."),
                "same": Column("tokens")}

ensure_frame()
active = require_model()
st.title("Compare two models", anchor=False)
st.caption("The same input through model A (picked in the sidebar) and model B: two checkpoints of one run, the "
           "live training weights against a saved checkpoint, or a model against itself. Outputs are aligned step "
           "by step and the first divergence is marked; one kind / layer / head selector drives both maps.")

col_b, col_text = st.columns([2, 3])
with col_b:
    other = pick_model_b(active)
bind_text("compare_text", active)
text = col_text.text_input("Input", key="compare_text", on_change=share_text, args=("compare_text",),
                           max_chars=MAX_INPUT_CHARS)
if other is None:
    st.stop()
result_a = greedy_or_message(active, text)
if result_a is None:
    st.stop()
try:
    result_b = greedy(other, text)
except InputError as exc:
    st.warning(f"Model B: {exc}", icon=":material/edit_note:")
    st.stop()

split = divergence_message(result_a, result_b)
out_a, out_b = st.columns(2, gap="large")
for column, tag, model, result in ((out_a, "A", active, result_a), (out_b, "B", other, result_b)):
    with column:
        st.markdown(model_caption(tag, model))
        show_chips(result.output_tokens, highlight=split, caption="output (first divergence outlined)")
with st.expander("Step by step", icon=":material/table_rows:"):
    steps = step_table(result_a, result_b)
    steps["same"] = steps["same"].map({True: "same", False: "differs"})
    show_small_table(steps, STEP_COLUMNS, key="compare_steps")

trace_a, trace_b = result_a.trace, result_b.trace
c_kind, c_step, c_layer, c_head = st.columns([4, 3, 2, 2], vertical_alignment="bottom")
with c_kind:
    kind = kind_picker("Attention", "compare_kind")
with c_step:
    t = step_picker(result_a, result_b)
n_layers = min(trace_a.n_layers(kind), trace_b.n_layers(kind))
n_heads = min(trace_a.n_heads, trace_b.n_heads)
with c_layer:
    layer = layer_picker("Layer", n_layers, "compare_layer")
with c_head:
    head = head_picker("Head", n_heads, "compare_head")
    head_keys("compare_head", n_heads)
if (trace_a.n_layers(kind), trace_a.n_heads) != (trace_b.n_layers(kind), trace_b.n_heads):
    st.caption(f"The models differ in size: only the {n_layers} layer(s) and {n_heads} head(s) both have are "
               "offered.")

st.markdown(step_caption(result_a, result_b, t))
stepped = kind != "encoder_self"  # the encoder's map is the same at every step
map_a, map_b = st.columns(2, gap="large")
for column, tag, model, trace in ((map_a, "A", active, trace_a), (map_b, "B", other, trace_b)):
    row = min(t, trace.axis_sizes(kind)[0] - 1) if stepped else None  # an output that ended shows its last row
    with column:  # the title as page text: it wraps in the column, where a chart title widened the chart past it
        chart_heading(f"{tag} · {model.option.name} · {KIND_TITLES[kind]} · layer {layer + 1} · "
                      f"{head_label(head).lower()}" + (f" · step {row + 1}" if stepped else ""))
        show_chart(attention_heatmap(trace, kind, layer, head, size=260, max_row=row, highlight_row=row, title=""),
                   key=f"compare_map_{tag.lower()}", width="content")

st.subheader("Difference B − A", anchor=False)
try:
    diff = attention_difference(trace_a, trace_b, kind, layer, head)
except ValueError as exc:
    st.info(f"No difference map: {exc}.", icon=":material/info:")
else:
    if diff.difference.size == 0:
        st.info("No difference map: the outputs part at the first step, so no decoder row is shared.",
                icon=":material/info:")
    else:
        left_out = f"; {diff.rows_left_out} row(s) after the first divergence left out" if diff.rows_left_out else ""
        st.caption(f"Largest |B − A| = {diff.max_abs:.3f} over {diff.difference.shape[0]} shared row(s){left_out}. "
                   "Blue: B attends more; red: A attends more.")
        show_chart(difference_heatmap(diff, size=420, title=f"B − A · {KIND_TITLES[kind]} · layer {layer + 1} · "
                                                            f"{head_label(head).lower()}"),
                   key="compare_difference", width="content")
