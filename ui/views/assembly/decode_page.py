"""The Decode page below its input row: the output cards, heads switched off, the beam tree, the patched run a click
on Compare's patching map opened, and the step-through."""
from __future__ import annotations

from typing import Callable

import streamlit as st

from ..features import show_beam_tree, show_patched_link
from ..kit import Selection, holds_maps
from .attention_page import show_document_views
from .step_through import decode_results, show_ablation_panel, show_step_through


def show_decode_views(sel: Selection, *, after: Callable[[], None]) -> None:
    """Every view of the Decode page for the record its input row made, in the page's order; `after` runs at the end
    of each step-through rerun (the page writes its link there, so the URL follows the step). The output cards go with
    the step-through (beside or under the step's map) and the beam tree under it: the map, Prev and Next and the
    top-k are on the first screen. A document (its decode kept the attention store) gets the views that read rows."""
    if not holds_maps(sel):
        show_document_views(sel)
        after()
        return
    results, prefix = decode_results(sel)
    first_screen = st.container()  # the step-through above the panel of heads switched off that it reads
    ablated = show_ablation_panel(sel)
    show_patched_link(sel)  # opened from a click on Compare's patching map
    with first_screen:
        show_step_through(sel, results, ablated, prefix=prefix, after=after)
    show_beam_tree(sel)
