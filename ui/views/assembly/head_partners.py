"""A head's composition partners on its page: the earlier heads it reads most and the later heads that read it most,
by Q-, K- and V-composition (Elhage et al. 2021; transformer.analysis.composition_scores), each a link to its page."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer.adapters import ResidualPathError
from transformer.model import Head
from ui.models import ActiveModel

from ..kit import composition_for, head_page_link

TOP = 5  # partners shown each way


def partners(frame: pd.DataFrame, head: Head, way: str, n: int = TOP) -> pd.DataFrame:
    """The `n` strongest pairs of `head` one way: `way` "reads" (earlier writers it reads) or "read_by" (later
    readers): columns `partner` (a label), `mode` (q, k or v) and `score`, strongest first."""
    mine, other = ("to", "from") if way == "reads" else ("from", "to")
    rows = frame[frame[mine] == head.label]
    long = rows.melt(id_vars=[other], value_vars=["q", "k", "v"], var_name="mode", value_name="score").dropna()
    return long.rename(columns={other: "partner"}).nlargest(n, "score").reset_index(drop=True)


def show_partners(active: ActiveModel, head: Head) -> None:
    """The head's strongest composition partners both ways, each a link to that head's page."""
    st.subheader("Composition partners", anchor=False)
    try:
        frame = composition_for(active)
    except ResidualPathError as err:
        st.info(f"No composition partners: {err}.", icon=":material/info:")
        return
    st.caption("How strongly a head's output feeds another head's queries (Q), keys (K) or values (V), from the "
               "weights alone: ‖OV¹ QK²‖ over the norms' product (Elhage et al. 2021). Each partner opens its page.")
    c_reads, c_read_by = st.columns(2)
    for column, way, title, empty in (
            (c_reads, "reads", "Earlier heads it reads", "No earlier head writes into what this head reads."),
            (c_read_by, "read_by", "Later heads that read it", "No later head reads this head's output.")):
        with column:
            st.markdown(f"**{title}**")
            found = partners(frame, head, way)
            if found.empty:
                st.caption(empty)
            for partner, mode, score in found.itertuples(index=False):
                head_page_link(Head.parse(partner), label=f"{partner} · {mode.upper()} {score:.2f}")
