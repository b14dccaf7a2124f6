"""A long input's zoom region, dragged or picked: a drag on the overview (an interval brush, read back through
Streamlit's selection state) or a link's `zoom=` moves the two pickers (rows, keys), snapped to whole tokens, clipped
to the input and at most the zoom's side; a region that covers no token is refused in one message and the pickers
keep theirs. The pickers' region is what the link keeps and what the overview outlines."""
from __future__ import annotations

import streamlit as st
import torch

from transformer.charts import (
    OVERVIEW_BRUSH,
    OVERVIEW_SCALES,
    Region,
    brushed_ends,
    brushed_region,
    drag_window,
    overview_chart,
    overview_frame,
)

from .link_params import LINK_PARAMS
from .stored_summaries import RESOLUTION
from .widgets import show_chart

ZOOM_ROWS_KEY, ZOOM_KEYS_KEY = "long_zoom_rows", "long_zoom_keys"  # the pickers
OVERVIEW_KEY = "long_overview"  # the overview's selection state (the drag)
REGION_KEY = LINK_PARAMS["decode"]["zoom"]  # the region as the link keeps it
SYNCED_KEY, DRAGGED_KEY = "long_zoom_synced", "long_zoom_dragged"  # the region last linked, the drag last applied
SCALE_KEY = LINK_PARAMS["decode"]["oscale"]  # the overview's colour scale (log or linear), in the link
SCALE_LABELS = {"log": "log (small weights visible)", "linear": "linear (0 to the max)"}


def _inside(region: object, rows: int, keys: int) -> bool:
    try:
        (r0, r1), (k0, k1) = region  # type: ignore[misc]
    except (TypeError, ValueError):
        return False
    return 0 <= r0 <= r1 <= rows and 0 <= k0 <= k1 <= keys


def take_region(rows: int, keys: int, max_side: int, default: Region) -> Region:
    """Before the overview is drawn: a new drag, else a link's new region, moved into the pickers (refused in one
    message when it covers no token of the input); the region the pickers hold now (`default` at first)."""
    state = st.session_state
    if not _inside((state.get(ZOOM_ROWS_KEY), state.get(ZOOM_KEYS_KEY)), rows, keys):
        state[ZOOM_ROWS_KEY], state[ZOOM_KEYS_KEY] = default  # new pickers (or another input's): the default,
        state[SYNCED_KEY] = None  # then the region the link keeps, if any (below)
    ends = brushed_ends(state.get(OVERVIEW_KEY))
    linked = state.get(REGION_KEY)
    try:
        if ends is not None and ends != state.get(DRAGGED_KEY):
            state[DRAGGED_KEY] = ends
            region = brushed_region(ends, rows, keys, max_side)
            whole = brushed_region(ends, rows, keys, max(rows, keys))
            if whole != region:
                st.caption(f"The drag covered {whole[0][1] - whole[0][0]:,} rows × {whole[1][1] - whole[1][0]:,} "
                           f"keys; the zoom takes at most {max_side:,} a side, from the drag's start.")
        elif linked is not None and linked != state.get(SYNCED_KEY):
            state[SYNCED_KEY] = linked
            (r0, r1), (k0, k1) = linked
            region = (drag_window(r0, r1, rows, max_side, "rows"), drag_window(k0, k1, keys, max_side, "keys"))
        else:
            region = None
    except ValueError as exc:
        st.error(f"Not zoomed: {exc}. The zoom keeps its region.", icon=":material/zoom_out_map:")
        region = None
    if region is not None:
        state[ZOOM_ROWS_KEY], state[ZOOM_KEYS_KEY] = region
    return tuple(state[ZOOM_ROWS_KEY]), tuple(state[ZOOM_KEYS_KEY])  # type: ignore[return-value]


def show_overview(grid: torch.Tensor, rows: int, keys: int, title: str, region: Region, side: int) -> None:
    """The overview (a streamed pass's grid) in token positions with `region` outlined, drawn at its own size: a map
    of rows × keys whose longer side is `side` pixels (not stretched to the column); a drag on it picks the region
    to zoom (a rerun); its colour scale picked above it (log by default: one cell at 1.0 leaves the rest pale on a
    linear one)."""
    scale = st.radio("Overview colour scale", OVERVIEW_SCALES, key=SCALE_KEY, horizontal=True,
                     format_func=SCALE_LABELS.__getitem__, help="Log: each power of ten of weight a step of colour, "
                     "weights under the floor named in the legend drawn as the floor. Linear: colour proportional to "
                     "the weight, from 0 to the map's largest. The weights themselves (tooltip, zoom) never change.")
    longest = max(rows, keys, 1)
    chart = overview_chart(overview_frame(grid, rows, keys, RESOLUTION), rows, keys, title, region,
                           width=max(120, round(side * keys / longest)), height=max(120, round(side * rows / longest)),
                           scale=scale)
    show_chart(chart, on_select="rerun", selection_mode=[OVERVIEW_BRUSH], key=OVERVIEW_KEY, width="content")
    st.caption("Drag a region on the overview to zoom to it (double-click clears the drag), or pick it below.")


def zoom_pickers(rows: int, keys: int) -> Region:
    """The rows and keys pickers (after `take_region`, which sets them); their region is kept for the link."""
    ends = ("The right handle is the position just past the last {0} shown: 0 to 192 shows {0}s 0–191, as the zoom's "
            "title says.")
    r0, r1 = st.slider("Zoom: rows", 0, rows, key=ZOOM_ROWS_KEY, help=ends.format("row"))
    k0, k1 = st.slider("Zoom: keys", 0, keys, key=ZOOM_KEYS_KEY, help=ends.format("key"))
    region = ((int(r0), int(r1)), (int(k0), int(k1)))
    st.session_state[REGION_KEY] = st.session_state[SYNCED_KEY] = region
    return region
