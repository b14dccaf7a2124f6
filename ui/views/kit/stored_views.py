"""A stored decode's views that need no streamed pass, so they come first: each decode step's row over every key,
recomputed exactly from the store (the rows the decode itself read), with its top keys named; and the document
view as one offline replay file (the layer's overviews, the region shown, the steps' rows)."""
from __future__ import annotations

import re
from functools import partial

import altair as alt
import pandas as pd
import streamlit as st
import torch

from transformer.analysis import LayerSummaries, pool_row
from transformer.charts import MAX_REPLAY_BYTES, long_replay_html, long_replay_size
from transformer.decode import DecodeResult
from ui.models import current_model
from ui.server import audience_refusal

from .stored_summaries import DEVICE
from .weights import weights_of
from .widgets import show_chart

TOP_NAMED = 3
CHART_PX = 600


def step_rows(result: DecodeResult, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(the store's row index of each decode step, their weights over every key (steps, keys)), exact."""
    store = result.trace.store
    assert store is not None
    one, offset = store.layer("self", layer), result.trace.step_offset
    rows = torch.arange(offset, min(offset + len(result.steps), one.n_rows))
    return rows, store.tile("self", layer, head, rows, slice(None), device=DEVICE)


def show_step_rows(result: DecodeResult, layer: int, head: int) -> None:
    """Each decode step's row of one head over every key (max per bin), with its top keys named."""
    rows, w = step_rows(result, layer, head)
    labels, keys = result.trace.decoder_input_tokens, w.shape[1]
    pooled = pool_row(w)  # (steps, bins)
    bins = pooled.shape[-1]
    names = [f"{t + 1} ‹{result.steps[t].token.strip() or '␣'}›" for t in range(len(rows))]
    frame = pd.DataFrame({"step": [names[t] for t in range(len(rows)) for _ in range(bins)],
                          "key": [int(b * keys / bins) for _ in range(len(rows)) for b in range(bins)],
                          "weight": pooled.reshape(-1).double().numpy()})
    chart = alt.Chart(frame, width=CHART_PX, height=100 + 22 * len(rows),  # the axes and title count in
                      title=f"The decode steps' rows: L{layer + 1} H{head + 1} over all {keys:,} keys (max per bin)"
                      ).mark_rect().encode(
        x=alt.X("key:O", title="key (bins)", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("step:O", title="step ‹output›", sort=names),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues")), tooltip=["step", "key", "weight"])
    show_chart(chart)
    best = w.topk(min(TOP_NAMED, keys), dim=-1)
    named = "; ".join(f"step {t + 1}: " + ", ".join(
        f"{int(k):,} `{labels[int(k)] if int(k) < len(labels) else '?'}` {float(p):.3g}"
        for p, k in zip(best.values[t], best.indices[t], strict=True)) for t in range(len(rows)))
    st.caption(f"Exact, from the store (the rows the decode read). Top keys: {named}.")


def long_replay_download(result: DecodeResult, layer: int, region: tuple[int, int, int, int],
                         summaries: LayerSummaries) -> None:
    """"Download replay": the document view as one offline HTML file (made only when clicked), or a caption naming
    the limit when it would pass the replay's 20 MB."""
    one = result.trace.store.layer("self", layer) if result.trace.store is not None else None
    if one is None:
        return
    size = long_replay_size(one.n_heads, len(result.steps), one.n_keys, region)
    if size > MAX_REPLAY_BYTES:
        st.caption(f"No replay file for this view: it would take at least {size / 1e6:.1f} MB of "
                   f"{MAX_REPLAY_BYTES / 1e6:g} MB. Zoom to a smaller region.")
        return
    active = current_model()
    name = active.option.label.replace("  ·  ", " · ") if active is not None else "model"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", active.option.name if active is not None else "model")
    why = audience_refusal("render")
    data = b"" if why else partial(long_replay_html, result, name, layer=layer, region=region,
                                   weights=weights_of(active) if active is not None else "", summaries=summaries)
    st.download_button("Download replay", data=data, file_name=f"replay_{stem}_document.html", mime="text/html",
                       key="long_doc_replay", icon=":material/play_circle:", on_click="ignore", disabled=bool(why),
                       help=why or f"One HTML file, offline: layer {layer + 1}'s overview of each head, the region "
                                   "shown with its exact weights and each decode step's row over every key.")
