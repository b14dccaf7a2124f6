"""Home: what Attention Studio is, a try-it box, and the way to the other pages."""
import streamlit as st

from transformer.charts import attention_heatmap
from transformer.decode import MAX_INPUT_CHARS
from transformer.model import SOURCE
from ui.links import show_gallery
from ui.models import SHIPPED, model_options, select_model
from ui.shell import ensure_frame
from ui.views import (
    MAP_WIDTH,
    bind_text,
    cached_chart,
    greedy_or_message,
    layer_picker,
    map_columns,
    map_kind,
    md,
    require_model,
    share_text,
    show_chart,
    show_chips,
)

TOY_OPTION = f"{SHIPPED}:toy-en-de"  # the model whose gold alignment is perfect

ensure_frame()
st.title("Attention Studio", anchor=False)
st.markdown("Train a small encoder-decoder transformer live, type a sentence, and watch what it attends to: "
            "step through greedy decoding token by token and inspect encoder self-, decoder self- and "
            "cross-attention for every layer and head. Everything runs on CPU, in seconds.")

active = require_model()
with st.container(border=True):
    st.markdown(f"#### Try it · {md(active.option.name)}")
    bind_text("home_text", active)
    col_in, col_layer = st.columns([4, 1], vertical_alignment="bottom")
    text = col_in.text_input(f"Type a {active.family.input_role}", key="home_text", on_change=share_text,
                             args=("home_text",),
                             max_chars=MAX_INPUT_CHARS,
                             help="The current model (see the sidebar) decodes it greedily.")
    result = greedy_or_message(active, text)
    if result is not None:
        with col_layer:
            kind = map_kind(result.trace)
            layer = layer_picker("Decoder layer", result.trace.n_layers(kind), "home_layer")
        # a long input's map goes below the tokens at the page's width, its first keys (the title says which)
        out_col, map_col = map_columns(result.trace, kind, [2, 3])
        with out_col:
            show_chips(result.trace.source_tokens, caption=active.family.axis_titles[SOURCE])
            show_chips(result.output_tokens, caption="output tokens")
            st.markdown(f"**Output:** {md(result.output_text) or '(empty)'}")
            if not result.finished:
                st.caption("Stopped at the step limit without producing </s>.")
        with map_col:
            show_chart(cached_chart(attention_heatmap, result.trace, kind, layer, None, size=315, max_width=MAP_WIDTH),
                       width="content")

if active.option.id != TOY_OPTION and TOY_OPTION in {o.id for o in model_options()}:
    st.button("Open the toy English → German model: its word alignment is known, so attention can be checked "
              "against it", key="home_toy", icon=":material/school:", on_click=select_model, args=(TOY_OPTION,),
              type="tertiary")
show_gallery()
st.markdown("#### Explore")
decode_col, attention_col, train_col = st.columns(3)
with decode_col.container(border=True):
    st.page_link("pages/decode.py", label="**Decode** step by step", icon=":material/skip_next:")
    st.caption("Next / Prev through the output; top-k candidates; force another token; teacher forcing.")
with attention_col.container(border=True):
    st.page_link("pages/attention.py", label="**Attention** explorer", icon=":material/grid_on:")
    st.caption("Encoder self-, decoder self- and cross-attention, every layer and head, statistics, export.")
with train_col.container(border=True):
    st.page_link("pages/train.py", label="**Train** a model live", icon=":material/model_training:")
    st.caption("Pick a task and size, watch loss curves and the probe's attention form, save the run.")
