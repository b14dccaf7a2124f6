"""Compare: one input through two models, outputs aligned step by step, the same map of both and their difference."""
import streamlit as st

from ui.shell import ensure_frame
from ui.views import (
    EDIT,
    compare_decodes,
    compare_mode,
    compare_selection,
    require_model,
    show_both_maps,
    show_difference,
    show_edit_mode,
    show_masked_compare,
    show_outputs,
    step_caption,
)

ensure_frame()
active = require_model()
st.title("Compare", anchor=False)
if not active.family.decodes:  # an encoder-only model: predictions at the masks (ui/views/assembly/masked_compare.py)
    show_masked_compare(active)  # (no st.stop here: a stopped run does not write its view into the link)
elif compare_mode() == EDIT:  # one model, an input and its edit (ui/views/assembly/edit_compare.py)
    show_edit_mode(active)
else:
    st.caption("The same input through model A (picked in the sidebar) and model B: two checkpoints of one run, the "
               "live training weights against a saved checkpoint, or a model against itself. Outputs are aligned step "
               "by step and the first divergence is marked; one kind / layer / head selector drives both maps.")

    sel = compare_decodes(active)  # model B, the input and both decodes
    if sel is None:
        st.stop()
    show_outputs(sel)
    sel = compare_selection(sel)  # the picker row: kind, step, layer, head
    st.markdown(step_caption(sel))
    show_both_maps(sel)
    if sel.kind == sel.other.kind:
        st.subheader("Difference B − A", anchor=False)
        show_difference(sel)
