"""Home: what Attention Studio is, a try-it box, and the way to the other pages."""
import streamlit as st

from ui.links import TOY_MODEL, show_gallery
from ui.models import model_options, select_model
from ui.shell import ensure_frame
from ui.views import home_selection, md, require_model, show_try_it

ensure_frame()
st.title("Attention Studio", anchor=False)
with st.container(key="home_intro"):  # (presenter mode hides it: the speaker says it, the map takes the screen)
    st.markdown("Train a small encoder-decoder transformer live, type a sentence, and watch what it attends to: "
                "step through greedy decoding token by token and inspect encoder self-, decoder self- and "
                "cross-attention for every layer and head. Everything runs on CPU, in seconds.")

active = require_model()
with st.container(border=True):
    st.markdown(f"#### Try it · {md(active.option.name)}")
    sel = home_selection(active)  # the input, the layer and the decode
    if sel is not None:
        show_try_it(sel)

if active.option.id != TOY_MODEL and TOY_MODEL in {o.id for o in model_options()}:
    st.button("Open the toy English → German model: its word alignment is known, so attention can be checked "
              "against it", key="home_toy", icon=":material/school:", on_click=select_model, args=(TOY_MODEL,),
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
