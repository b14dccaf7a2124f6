"""A stored decode's views that need no streamed pass, so they come first: each decode step's row over every key,
recomputed exactly from the store (the rows the decode itself read), with its top keys named; and the document
view as one offline replay file (the layer's overviews, the region shown, the steps' rows)."""
from __future__ import annotations

import re
from functools import partial

import streamlit as st
import torch

from transformer.analysis import LayerSummaries, attention_source
from transformer.charts import MAX_REPLAY_BYTES, long_replay_size, replay_html, step_rows_chart
from transformer.decode import DecodeResult
from ui.models import current_model
from ui.server import audience_refusal

from .stored_summaries import DEVICE
from .weights import weights_of
from .widgets import show_chart

TOP_NAMED = 3


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


def long_replay_download(result: DecodeResult, layer: int, region: tuple[int, int, int, int],
                         summaries: LayerSummaries) -> None:
    """"Download replay": the document view as one offline HTML file (made only when clicked), or a caption naming
    the limit when it would pass the replay's 20 MB."""
    _, n_heads, _, n_keys = attention_source(result.trace).shape("self")
    size = long_replay_size(n_heads, len(result.steps), n_keys, region)
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
                       key="long_doc_replay", icon=":material/play_circle:", on_click="ignore", disabled=bool(why),
                       help=why or f"One HTML file, offline: layer {layer + 1}'s overview of each head, the region "
                                   "shown with its exact weights and each decode step's row over every key.")
