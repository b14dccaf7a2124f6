"""The map in the mode its source allows, one entry for callers that draw one chart (the notebook; the app's page
draws the overview and the zoom beside each other itself): every weight a cell where the source holds the maps, a
document's overview (one head's streamed pass, pooled in token positions) where it holds a store, and with a region
that region's exact weights (`zoom`), from either."""
from __future__ import annotations

from typing import Sequence

import altair as alt

from ...analysis import AttentionSource, attention_source, summarise_layer
from ...decode import AttentionTrace
from .cells import attention_heatmap
from .overview import Region, overview_chart, overview_frame
from .zoom import REGION_MAX, TILE_SIDE_PX, zoom_chart, zoom_frame, zoom_labelled, zoom_tokens

OVERVIEW_RESOLUTION = 96  # the overview's cells a side (as the app's document view)


def attention_map(trace: AttentionTrace, kind: str, layer: int, head: int | None = None, *,
                  region: Region | None = None, side: int = TILE_SIDE_PX) -> alt.TopLevelMixin:
    """One head's map of `kind` at `layer` (`head` None: the mean of heads): `attention_heatmap` where the trace
    holds its maps, else the document's overview; with `region` ((first row, end row), (first key, end key)) the
    region's exact weights, at most REGION_MAX a side (ValueError, one line, past it or outside the input)."""
    source = attention_source(trace)
    n_layers, n_heads, n_rows, n_keys = source.shape(kind)
    if not 0 <= layer < n_layers:
        raise ValueError(f"{kind} has {n_layers} layer(s) (0 to {n_layers - 1}); layer {layer} does not exist")
    if head is not None and not 0 <= head < n_heads:
        raise ValueError(f"{kind} has {n_heads} heads (0 to {n_heads - 1}); head {head} does not exist")
    if region is not None:
        rows, keys = trace.labels(kind)
        return _zoom(source, keys if list(rows) == list(keys) else None, kind, layer, head, region, n_rows, n_keys,
                     side)
    if source.holds_maps:
        return attention_heatmap(trace, kind, layer, head)
    summaries = summarise_layer(source, kind, layer, resolution=OVERVIEW_RESOLUTION,
                                heads=None if head is None else [head], with_mean=head is None)
    which = "the mean of heads" if head is None else f"head {head + 1}"
    longest = max(n_rows, n_keys, 1)
    return overview_chart(overview_frame(summaries.overview[-1], n_rows, n_keys, OVERVIEW_RESOLUTION), n_rows, n_keys,
                          f"Layer {layer + 1}, {which}: the max of each cell over {n_rows:,} rows × {n_keys:,} keys",
                          width=max(120, round(side * n_keys / longest)),
                          height=max(120, round(side * n_rows / longest)))


def _zoom(source: AttentionSource, tokens: Sequence[str] | None, kind: str, layer: int, head: int | None,
          region: Region, n_rows: int, n_keys: int, side: int) -> alt.TopLevelMixin:
    """The region's exact weights; its tokens on the axes when small and the kind's rows are its keys."""
    (r0, r1), (k0, k1) = (int(region[0][0]), int(region[0][1])), (int(region[1][0]), int(region[1][1]))
    if not (0 <= r0 < r1 <= n_rows and 0 <= k0 < k1 <= n_keys):
        raise ValueError(f"the region rows {r0:,}–{r1:,} × keys {k0:,}–{k1:,} is outside the input (rows "
                         f"0–{n_rows:,}, keys 0–{n_keys:,})")
    if max(r1 - r0, k1 - k0) > REGION_MAX:
        raise ValueError(f"a region of {r1 - r0:,} rows × {k1 - k0:,} keys: at most {REGION_MAX:,} a side")
    frame, title, _ = zoom_frame(source, layer, head, (r0, r1), (k0, k1), kind)
    small = tokens is not None and zoom_labelled((r0, r1), (k0, k1))
    chart = zoom_chart(title, (r0, r1), (k0, k1), tokens if small else None, side=side)
    chart.data = zoom_tokens(frame, tokens) if small and tokens is not None else frame
    return chart
