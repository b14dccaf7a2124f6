"""Which sources wrote a dictionary feature, drawn (docs/dictionaries.md): the Features page's text of the user's and
a document's row. The row over the text, a cell a token, or past LONG_ROW sources its strongest sources as a table;
the caption says how the text was read (the maps, or the attention store) and that the shares and the constant sum to
the pre-activation."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer.charts import feature_sources_chart, visible_token
from transformer.dictionaries import TextSources

from .widgets import show_chart

LONG_ROW = 96  # sources beyond which the row is a table of its strongest sources, not a cell a token
TOP_SOURCES = 12


def show_text_sources(found: TextSources, key: str, picked: bool = False) -> None:
    """The feature's sources at its query (`picked`: a position the user chose, not the feature's strongest)."""
    sources, tokens = found.sources, [visible_token(t) for t in found.tokens]
    how = "through the attention store" if found.stored else "through the maps"
    where = f"position {sources.query + 1} ({tokens[sources.query]!r})"
    if sources.activation <= 0:
        said = (f"does not fire at {where}: its pre-activation there is" if picked else
                f"does not fire on this text: its largest pre-activation, at {where}, is")
        st.info(f"Feature #{sources.feature} {said} {sources.pre_activation:.2f} (read {how}).", icon=":material/info:")
    if len(tokens) <= LONG_ROW:
        show_chart(feature_sources_chart(sources, tokens), key=f"{key}_chart", width="content")
    else:
        shares = pd.DataFrame({"position": range(1, len(tokens) + 1), "token": tokens, "share": sources.by_source()})
        st.dataframe(shares.reindex(shares["share"].abs().sort_values(ascending=False).index).head(TOP_SOURCES),
                     hide_index=True, key=f"{key}_top",
                     column_config={"share": st.column_config.NumberColumn(format="%+.3f")})
    heads = ", ".join(f"H{h + 1} {v:+.2f}" for h, v in enumerate(sources.by_head()))
    st.caption(f"{len(tokens):,} tokens read {how}; at {where} activation {sources.activation:.2f}, pre-activation "
               f"{sources.pre_activation:.2f} = the sources' shares {sum(sources.by_source()):+.2f} + a constant "
               f"{sources.constant:+.2f}. By head: {heads}.")
