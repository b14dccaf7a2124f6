"""A document as the input (decoder-only models whose context reads past the store's threshold): a multi-line box
that keeps line breaks or a text file (UTF-8 or .gz), its tokens against the model's own context, the estimated time
and memory confirmed by a button, the decode as a background job with the attention store (never the shared decode
queue, which pads a batch to its longest member), then an overview of the whole input with a region to zoom whose
weights are recomputed exactly from the store, and a query's row as a strip over every key with its top keys named.
The link carries the document's hash (`doc=`), never its text."""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import streamlit as st
import torch

from transformer.analysis import TILE_SIDE, attention_source, estimate_decode, free_memory, pool_row, stats_frame
from transformer.charts import REGION_MAX, row_strip_chart, row_strip_frames, zoom_frame, zoom_labelled, zoom_tokens
from transformer.charts import zoom_spec as chart_zoom_spec
from transformer.data import DataError, text_from_bytes
from transformer.decode import STORE_ABOVE, DecodeResult, char_limit, greedy_decode, model_context
from ui.models import ActiveModel
from ui.server import DOC_PARAM, DOC_STATE_KEY, keep_text, kept_text, shared_cache, text_hash

from ..kit import (
    LINK_PARAMS,
    JobTexts,
    analysis_result,
    can_start,
    long_replay_download,
    presenting,
    show_chart,
    show_overview,
    show_step_rows,
    start_button,
    stored_summaries,
    take_region,
    zoom_pickers,
)

ON_KEY, TEXT_KEY, UPLOAD_KEY = "long_doc_on", "long_doc_text", "long_doc_upload"
STEPS_KEY = LINK_PARAMS["decode"]["dsteps"]  # the document's decode steps, in its link
JOB_KEY, LINK_READ_KEY, UPLOADED_KEY = "long_doc_job", "long_doc_link_read", "long_doc_uploaded"
LAYER_KEY, HEAD_KEY, QUERY_KEY = "long_layer", "long_head", "long_query"
MAP_SIDE, PRESENT_SIDE = 460, 520  # pixels a side of the overview's and the zoom's plots (presenter mode: larger)


def reads_long(active: ActiveModel) -> bool:
    """Whether the model takes a document: decoder-only, its own context past the store's threshold."""
    return active.family.prompt_in_decoder and model_context(active.adapter) > STORE_ABOVE


def _read_link() -> None:
    digest = st.query_params.get(DOC_PARAM)
    if not digest or st.session_state.get(LINK_READ_KEY) == digest:
        return
    st.session_state[LINK_READ_KEY] = digest
    text = kept_text(digest)
    if text is None:
        st.info("The document this link names is not kept on this server (it was cleared, or the link is from "
                "another one): paste or upload it again.", icon=":material/link_off:")
        return
    st.session_state[TEXT_KEY], st.session_state[ON_KEY] = text, True


def _read_upload() -> None:
    upload = st.session_state.get(UPLOAD_KEY)
    if upload is None or st.session_state.get(UPLOADED_KEY) == upload.file_id:
        return
    st.session_state[UPLOADED_KEY] = upload.file_id
    try:
        st.session_state[TEXT_KEY] = text_from_bytes(upload.getvalue(), upload.name)
    except DataError as exc:
        st.session_state[UPLOADED_KEY + "_error"] = str(exc)


def show_long_input(active: ActiveModel) -> DecodeResult | None:
    """The document switch and, when on, its box, file, estimate, job and views; the decode once it is done."""
    st.session_state.pop(DOC_STATE_KEY, None)  # in the link only while a document's decode is shown
    if not reads_long(active):
        return None
    _read_link()
    adapter, context = active.adapter, model_context(active.adapter)
    if not st.toggle("Expand to a document", key=ON_KEY, help=f"A long input (up to {active.option.name}'s own "
                     f"context, {context:,} tokens): pasted with its line breaks or read from a text file."):
        return None
    st.file_uploader("Text file (UTF-8 or .gz)", key=UPLOAD_KEY, on_change=_read_upload)
    error = st.session_state.pop(UPLOADED_KEY + "_error", None)
    if error:
        st.error(error, icon=":material/description:")
    text = st.text_area("Document", key=TEXT_KEY, height=180, placeholder="Paste a document, a chat or code here")
    if not text.strip():
        return None
    if len(text) > char_limit(adapter):
        st.error(f"The document has {len(text):,} characters; {active.option.name} reads at most {context:,} tokens "
                 f"(its own context), so at most {char_limit(adapter):,} characters.", icon=":material/straighten:")
        return None
    n = len(adapter.decoder_prefix(adapter.tokenize_source(text)))
    st.session_state.setdefault(STEPS_KEY, 8)  # a link's `dsteps` restores it (the widget takes no default then)
    steps = int(st.number_input("Steps to decode", 1, 64, key=STEPS_KEY))
    if n + steps > context:
        st.error(f"The document has {n:,} tokens and {steps} steps; {active.option.name} reads at most "
                 f"{context:,} tokens (its own context).", icon=":material/straighten:")
        return None
    seconds, memory, store = estimate_decode(adapter, n, steps)
    if memory > free_memory():
        st.error(f"Decoding {n:,} tokens needs about {memory / 2**20:,.0f} MB; the machine has "
                 f"{free_memory() / 2**20:,.0f} MB free. Shorten the document.", icon=":material/memory:")
        return None
    identity = ("long-decode", active.cache_key, text_hash(text), steps)
    st.caption(f"{n:,} tokens of the model's {context:,}. Estimated: about {max(seconds, 1):,.0f} s and "
               f"{memory / 2**20:,.0f} MB (the attention store {store / 2**20:,.1f} MB; no n × n map is kept).")
    if identity not in shared_cache() and can_start(identity):  # kept already: no decode to start
        start_button(f"Decode the document (about {max(seconds, 1):,.0f} s, {memory / 2**20:,.0f} MB)", identity,
                     key=JOB_KEY, icon=":material/play_arrow:")

    def run(progress: Any) -> DecodeResult:
        progress(0.0)
        return shared_cache().get(identity, lambda: greedy_decode(adapter, text, max_steps=steps, residuals=True))

    if identity in shared_cache():  # decoded already (another session, a link): no job to wait for
        result = shared_cache().get(identity, lambda: greedy_decode(adapter, text, max_steps=steps, residuals=True))
    else:
        result = analysis_result(identity, f"Decoding {n:,} tokens", run, key=JOB_KEY, texts=JobTexts())
    if result is None:
        return None
    digest = st.session_state[DOC_STATE_KEY] = keep_text(text)
    st.success(f"**{result.output_text.strip() or '(no text)'}** after {n:,} tokens.", icon=":material/done:")
    st.caption(f"The page's link names this document as `{DOC_PARAM}={digest}`: the text stays on this server, "
               "the link carries its hash and the view.")
    show_long_views(result, identity)
    return result


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


def show_long_views(result: DecodeResult, identity: tuple) -> None:
    """The overview of one head over the whole input, its zoomed tile (exact) and a query's row (`identity`: the
    decode's, under which its summaries are shared)."""
    source, labels = attention_source(result.trace), result.trace.decoder_input_tokens
    n_layers, n_heads, rows, keys = source.shape("self")
    left, right = st.columns(2)
    layer = int(left.number_input("Layer", 1, n_layers, 1, key=LAYER_KEY)) - 1
    head = int(right.number_input("Head", 1, n_heads, 1, key=HEAD_KEY)) - 1
    show_step_rows(result, layer, head)  # exact and cheap: before the streamed pass
    summary, first = stored_summaries(source, identity, layer, head)  # the current head's pass first, then every head
    if summary is None and first is None:
        return
    grid = summary.overview[head] if summary is not None else first.overview[0]
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
        long_replay_download(result, layer, (z0, z1, y0, y1), summary)
    (r0, r1), (k0, k1) = zoom_pickers(rows, keys)  # the region picked, or dragged on the overview
    if r1 - r0 > REGION_MAX or k1 - k0 > REGION_MAX or r1 <= r0 or k1 <= k0:
        st.info(f"Pick a region of at most {REGION_MAX:,} rows × {REGION_MAX:,} keys to see its exact weights.",
                icon=":material/zoom_in:")
    else:
        frame, title, _ = zoom_frame(source, layer, head, (r0, r1), (k0, k1))
        small = zoom_labelled((r0, r1), (k0, k1))
        st.vega_lite_chart(zoom_tokens(frame, labels) if small else frame,
                           zoom_spec(title, (r0, r1), (k0, k1), labels if small else None), width="content")
    query = int(st.number_input("A query's row", 0, rows - 1, rows - 1, key=QUERY_KEY))
    show_row_strip(source.tile("self", layer, head, [query], slice(None))[0], labels, query)
