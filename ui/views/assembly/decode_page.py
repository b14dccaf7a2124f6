"""The Decode page below its input row: the output cards, heads switched off, the beam tree, the patched run a click
on Compare's patching map opened, and the step-through."""
from __future__ import annotations

from typing import Callable

from ..features import show_beam_tree, show_patched_link
from ..kit import Selection, presenting
from .step_through import decode_results, show_ablation_panel, show_output_cards, show_step_through


def show_decode_views(sel: Selection, *, after: Callable[[], None]) -> None:
    """Every view of the Decode page for the record its input row made, in the page's order; `after` runs at the end
    of each step-through rerun (the page writes its link there, so the URL follows the step). In presenter mode the
    output card goes beside the step's map and the beam tree under the step-through: the map and the top-k are on
    the first screen."""
    results, prefix = decode_results(sel)
    if not presenting():
        show_output_cards(results, prefix)
    ablated = show_ablation_panel(sel)
    if not presenting():
        show_beam_tree(sel)
    show_patched_link(sel)  # opened from a click on Compare's patching map
    show_step_through(sel, results, ablated, prefix=prefix, after=after)
    if presenting():
        show_beam_tree(sel)
