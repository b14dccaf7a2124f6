"""The Home page's try-it box: an input, its greedy decode and one layer's map."""
from __future__ import annotations

import streamlit as st

from transformer.charts import attention_heatmap
from transformer.model import SOURCE
from ui.models import ActiveModel

from ..kit import (
    BOX_INSET_PX,
    LINK_PARAMS,
    MAP_WIDTH,
    PRESENTED_ROWS_PX,
    Selection,
    bind_text,
    cached_chart,
    greedy_or_message,
    layer_picker,
    map_columns,
    map_fit,
    map_kind,
    md,
    model_text_input,
    presenting,
    share_text,
    show_chart,
    show_chips,
)

KEYS = LINK_PARAMS["home"]  # link parameter -> widget key


def home_selection(active: ActiveModel) -> Selection | None:
    """The try-it row (the input, the decoder layer) and the input's greedy decode as a Selection of the model's map
    kind; None after a message when the input cannot be read."""
    bind_text(KEYS["text"], active)
    col_in, col_layer = st.columns([4, 1], vertical_alignment="bottom")
    text = model_text_input(col_in, f"Type a {active.family.input_role}", key=KEYS["text"], on_change=share_text,
                            args=(KEYS["text"],),
                            help="The current model (see the sidebar) decodes it greedily.")
    result = greedy_or_message(active, text)
    if result is None:
        return None
    with col_layer:
        kind = map_kind(result.trace)
        layer = layer_picker("Decoder layer", result.trace.n_layers(kind), KEYS["layer"])
    return Selection("home", active, text, result, kind=kind, layer=layer)


def show_try_it(sel: Selection) -> None:
    """The input's tokens, the output and the selected layer's map (the mean of heads), fitted to its column with its
    labels and legend as the other pages' maps; a long input's map goes below the tokens at the page's width, its
    first keys (the title says which)."""
    result, kind = sel.result, sel.kind
    out_col, map_col = map_columns(result.trace, kind, [2, 3])
    with out_col:
        show_chips(result.trace.source_tokens, caption=sel.model.family.axis_titles[SOURCE])
        show_chips(result.output_tokens, caption="output tokens")
        st.markdown(f"**Output:** {md(result.output_text) or '(empty)'}")
        if not result.finished:
            st.caption("Stopped at the step limit without producing </s>.")
    with map_col:
        show_chart(cached_chart(attention_heatmap, result.trace, kind, sel.layer, None,
                                **map_fit(result.trace, kind, 270, MAP_WIDTH, inset=BOX_INSET_PX,  # a projector: rows
                                          rows_px=PRESENTED_ROWS_PX if presenting() else None)), width="content")
