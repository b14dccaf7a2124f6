"""The large map when whole maps would be too big (a document: its decode kept the attention store): the decode
steps' rows over every key, exact; the overview of the picked head over the whole input from a streamed pass (the
current head first, as the session's background job, kept in the shared cache for every session); the zoom region
dragged on the overview or picked, kept in the link, its weights recomputed exactly; the picked row as a strip over
every key with its top keys named; the layer's head statistics from the same pass; and the view as one offline
replay file. Layer, head and row are the page's Selection's."""
from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable, Sequence

import pandas as pd
import streamlit as st
import torch

from transformer.analysis import (
    TILE_SIDE,
    AttentionSource,
    LayerSummaries,
    attention_source,
    pool_row,
    stats_frame,
    summarise_layer,
)
from transformer.charts import (
    MAX_REPLAY_BYTES,
    OVERVIEW_BRUSH,
    OVERVIEW_SCALES,
    REGION_MAX,
    Region,
    brushed_ends,
    brushed_region,
    document_replay_size,
    drag_window,
    overview_chart,
    overview_frame,
    replay_html,
    row_strip_chart,
    row_strip_frames,
    step_rows_chart,
    zoom_frame,
    zoom_labelled,
    zoom_tokens,
)
from transformer.charts import zoom_spec as chart_zoom_spec
from transformer.decode import DecodeResult
from ui.models import current_model
from ui.server import audience_refusal, shared_cache, text_hash

from ..kit import (
    LINK_PARAMS,
    JobTexts,
    Selection,
    analysis_result,
    can_start,
    current_job,
    part_ready,
    presenting,
    show_chart,
    show_job_progress,
    start_button,
    weights_of,
)

MAP_SIDE, PRESENT_SIDE = 460, 520  # pixels a side of the overview's and the zoom's plots (presenter mode: larger)
SUMMARY_JOB_KEY = "overview_job"
CANCELLED_KEY = "overview_cancelled"  # session state: the pass the user cancelled (not restarted by a rerun)
RESOLUTION = 96  # the overview's cells a side
DEVICE = "cuda" if torch.cuda.is_available() else None  # where tiles and passes are computed (None: the store's CPU)
TOP_NAMED = 3  # top keys named per decode step
ZOOM_ROWS_KEY, ZOOM_KEYS_KEY = "map_zoom_rows", "map_zoom_keys"  # the pickers
OVERVIEW_KEY = "map_overview"  # the overview's selection state (the drag)
REGION_KEY = LINK_PARAMS["decode"]["zoom"]  # the region as the link keeps it
SYNCED_KEY, DRAGGED_KEY = "map_zoom_synced", "map_zoom_dragged"  # the region last linked, the drag last applied
SCALE_KEY = LINK_PARAMS["decode"]["oscale"]  # the overview's colour scale (log or linear), in the link
SCALE_LABELS = {"log": "log (small weights visible)", "linear": "linear (0 to the max)"}


def summary_key(identity: tuple, layer: int) -> tuple:
    """The shared cache's key of a decode's layer summaries (every head)."""
    return ("overview-summary", *identity, layer)


def head_summary_key(identity: tuple, layer: int, head: int) -> tuple:
    """The shared cache's key of one head's summaries, computed first."""
    return ("overview-summary-head", *identity, layer, head)


def summarise_stored(source: AttentionSource, layer: int, head: int | None = None,
                     progress: Callable[[float], None] | None = None) -> LayerSummaries:
    """The layer's summaries in one streamed pass (`head`: that head alone), at the overview's resolution."""
    return summarise_layer(source, "self", layer, resolution=RESOLUTION, device=DEVICE, progress=progress,
                           heads=None if head is None else [head])


def stored_summaries(source: AttentionSource, identity: tuple, layer: int, head: int
                     ) -> tuple[LayerSummaries | None, LayerSummaries | None]:
    """(every head's summaries, the current head's alone) of a stored decode's layer, each None until computed:
    kept ones at once, else the background job (started at once; drawn as its progress bar and Cancel)."""
    table, state = shared_cache(), st.session_state
    whole_key, head_key = summary_key(identity, layer), head_summary_key(identity, layer, head)
    if whole_key in table:
        return table.get(whole_key, lambda: summarise_stored(source, layer)), None
    _, n_heads, n_rows, _ = source.shape("self")
    share = 1 / (n_heads + 1) if n_heads > 1 else 0.0  # the current head's pass: about 1/H of every head's

    def run(progress: Callable[[float], None]) -> LayerSummaries:
        if share and head_key not in table:
            table.put(head_key, summarise_stored(source, layer, head, lambda f: progress(share * f)))
            part_ready()  # the page reruns once: this head's overview is drawn while the others are summarised
        whole = summarise_stored(source, layer, progress=lambda f: progress(share + (1 - share) * f))
        table.put(whole_key, whole)
        return whole

    running = current_job()
    if running is not None and running.identity != whole_key and running.identity[:1] == whole_key[:1] \
            and not running.done.is_set():  # another layer's pass still runs: its bar and Cancel, then this one
        show_job_progress(running.identity, SUMMARY_JOB_KEY)
        return None, (table.get(head_key, lambda: None) if head_key in table else None)
    stopped = state.get(CANCELLED_KEY) == whole_key
    if stopped and can_start(whole_key):
        start_button(f"Summarise layer {layer + 1} (every head, one streamed pass)", whole_key, key=SUMMARY_JOB_KEY,
                     icon=":material/play_arrow:")
    whole = analysis_result(whole_key, f"Summarising layer {layer + 1}: {n_rows:,} rows, every head", run,
                            key=SUMMARY_JOB_KEY, start=None if stopped else True,
                            texts=JobTexts(cancelled=f"The summaries of layer {layer + 1} were cancelled: its overview "
                                                     "and head statistics wait for them."),
                            on_cancel=lambda: state.__setitem__(CANCELLED_KEY, whole_key))
    if whole is not None:
        if stopped:
            state.pop(CANCELLED_KEY, None)
        return whole, None
    return None, (table.get(head_key, lambda: None) if head_key in table else None)


def step_rows(result: DecodeResult, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(the row index of each decode step, their weights over every key (steps, keys)), exact, through the trace's
    attention source."""
    source, offset = attention_source(result.trace), result.trace.step_offset
    rows = torch.arange(offset, min(offset + len(result.steps), source.shape("self")[2]))
    return rows, source.tile("self", layer, head, rows, slice(None), device=DEVICE)


def show_step_rows(result: DecodeResult, layer: int, head: int) -> None:
    """Each decode step's row of one head over every key (max per bin), with its top keys named."""
    rows, w = step_rows(result, layer, head)
    labels, keys = result.trace.decoder_input_tokens, w.shape[1]
    names = [f"{t + 1} ‹{result.steps[t].token.strip() or '␣'}›" for t in range(len(rows))]
    show_chart(step_rows_chart(w, names, f"The decode steps' rows: L{layer + 1} H{head + 1} over all {keys:,} keys "
                               "(max per bin)"))
    best = w.topk(min(TOP_NAMED, keys), dim=-1)
    named = "; ".join(f"step {t + 1}: " + ", ".join(
        f"{int(k):,} `{labels[int(k)] if int(k) < len(labels) else '?'}` {float(p):.3g}"
        for p, k in zip(best.values[t], best.indices[t], strict=True)) for t in range(len(rows)))
    st.caption(f"Exact, from the store (the rows the decode read). Top keys: {named}.")


def document_replay_download(result: DecodeResult, layer: int, region: tuple[int, int, int, int],
                         summaries: LayerSummaries) -> None:
    """"Download replay": the document view as one offline HTML file (made only when clicked), or a caption naming
    the limit when it would pass the replay's 20 MB."""
    _, n_heads, _, n_keys = attention_source(result.trace).shape("self")
    size = document_replay_size(n_heads, len(result.steps), n_keys, region)
    if size > MAX_REPLAY_BYTES:
        st.caption(f"No replay file for this view: it would take at least {size / 1e6:.1f} MB of "
                   f"{MAX_REPLAY_BYTES / 1e6:g} MB. Zoom to a smaller region.")
        return
    active = current_model()
    name = active.option.label.replace("  ·  ", " · ") if active is not None else "model"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", active.option.name if active is not None else "model")
    why = audience_refusal("render")
    data = b"" if why else partial(replay_html, result, name, layer=layer, region=region,
                                   weights=weights_of(active) if active is not None else "", summaries=summaries)
    st.download_button("Download replay", data=data, file_name=f"replay_{stem}_document.html", mime="text/html",
                       key="document_replay", icon=":material/play_circle:", on_click="ignore", disabled=bool(why),
                       help=why or f"One HTML file, offline: layer {layer + 1}'s overview of each head, the region "
                                   "shown with its exact weights and each decode step's row over every key.")


def _inside(region: Any, rows: int, keys: int) -> bool:
    try:
        (r0, r1), (k0, k1) = region
        return 0 <= int(r0) <= int(r1) <= rows and 0 <= int(k0) <= int(k1) <= keys
    except (TypeError, ValueError):
        return False


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
    picked_rows: Any = st.slider("Zoom: rows", 0, rows, key=ZOOM_ROWS_KEY, help=ends.format("row"))  # a range
    picked_keys: Any = st.slider("Zoom: keys", 0, keys, key=ZOOM_KEYS_KEY, help=ends.format("key"))
    (r0, r1), (k0, k1) = picked_rows, picked_keys
    region = ((int(r0), int(r1)), (int(k0), int(k1)))
    st.session_state[REGION_KEY] = st.session_state[SYNCED_KEY] = region
    return region


def zoom_spec(title: str, rows: tuple[int, int], keys: tuple[int, int], tokens: Sequence[str] | None = None
              ) -> dict[str, Any]:
    """The zoom's spec at this page's size (presenter mode: larger)."""
    return chart_zoom_spec(title, rows, keys, tokens, side=side(), large=presenting())


def side() -> int:
    """Pixels a side of the overview's and the zoom's plots (a map of rows x keys): larger in presenter mode."""
    return PRESENT_SIDE if presenting() else MAP_SIDE


def show_row_strip(row: torch.Tensor, labels: Sequence[str], query: int) -> None:
    """A query's row over every key, scaled to the row's max (its shape shows whatever its scale), top keys named."""
    keys = row.numel()
    bins = pool_row(row)
    strip, named = row_strip_frames(row, bins, labels)
    peak = float(row.max())
    show_chart(row_strip_chart(strip, named, keys, f"Row {query:,} over all {keys:,} keys (max per bin, scaled to "
                               f"the row's max {peak:.3g})", width=side() + 80), width="content")
    listed = ", ".join(f"{k:,} `{t}` {w:.3g}" for k, t, w in zip(named["key"], named["token"], named["weight"],
                                                                  strict=True))
    st.caption(f"Top keys of row {query:,}: {listed}. A row spread evenly would give each of its {query + 1:,} "
               f"keys {1 / (query + 1):.3g}.")


def decode_identity(sel: Selection) -> tuple:
    """The identity a document's decode is shared under (its summaries' too): the model, the text, the steps."""
    return (sel.model.cache_key, text_hash(sel.result.source_text), len(sel.result.steps))


def show_map_overview(sel: Selection) -> None:
    """The overview of the picked head over the whole input, its zoomed tile (exact), the layer's head statistics
    and the picked row's strip."""
    result, layer, head = sel.result, sel.layer, sel.head if sel.head is not None else 0
    source, labels = attention_source(result.trace), result.trace.decoder_input_tokens
    _, _, rows, keys = source.shape("self")
    query = sel.row if sel.row is not None else rows - 1
    show_step_rows(result, layer, head)  # exact and cheap: before the streamed pass
    summary, first = stored_summaries(source, decode_identity(sel), layer, head)  # this head's pass first
    if summary is not None:
        grid = summary.overview[head]
    elif first is not None:
        grid = first.overview[0]
    else:
        return
    default = ((rows - min(rows, TILE_SIDE), rows), (max(keys - TILE_SIDE, 0), keys))
    region = take_region(rows, keys, REGION_MAX, default)  # a new drag on the overview (or a link's) moves the pickers
    show_overview(grid, rows, keys, f"Overview: L{layer + 1} H{head + 1}, {rows:,} rows × {keys:,} keys (the max of "
                  "each cell)", region, side())
    if summary is None:
        st.caption(f"This head's overview, from its own pass; layer {layer + 1}'s other heads follow.")
        return
    table = stats_frame([summary])  # the head statistics, as every page's, from the same pass
    stats = pd.DataFrame({"head": [f"H{h + 1}" for h in table["head"]],
                          "entropy (nats, mean of rows)": table["entropy"], "peak weight": table["max_weight"],
                          "on the first token": table["first"], f"within {summary.window} positions": table["local"]})
    st.dataframe(stats, hide_index=True, width="stretch",  # presenter mode's larger font: the columns still fit
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in stats.columns[1:]})
    st.caption(f"Layer {layer + 1}'s heads over all {rows:,} rows, from the same streamed pass.")
    (z0, z1), (y0, y1) = region
    if z1 > z0 and y1 > y0:
        document_replay_download(result, layer, (z0, z1, y0, y1), summary)
    (r0, r1), (k0, k1) = zoom_pickers(rows, keys)  # the region picked, or dragged on the overview
    if r1 - r0 > REGION_MAX or k1 - k0 > REGION_MAX or r1 <= r0 or k1 <= k0:
        st.info(f"Pick a region of at most {REGION_MAX:,} rows × {REGION_MAX:,} keys to see its exact weights.",
                icon=":material/zoom_in:")
    else:
        frame, title, _ = zoom_frame(source, layer, head, (r0, r1), (k0, k1))
        small = zoom_labelled((r0, r1), (k0, k1))
        st.vega_lite_chart(zoom_tokens(frame, labels) if small else frame,
                           zoom_spec(title, (r0, r1), (k0, k1), labels if small else None), width="content")
    show_row_strip(source.tile("self", layer, head, [query], slice(None))[0], labels, query)
