"""The map's zoom mode: a region of one head (rows × keys), its weights exact through the attention source (a short
input's maps or a document's store), with ticks at token positions, and the tokens themselves as labels when the
region is small. Token labels are data (a parameter's value, a column), never part of a Vega expression."""
from __future__ import annotations

from typing import Any, Sequence

import altair as alt
import pandas as pd
import torch
from torch import Tensor

from ...analysis import TILE_SIDE, AttentionSource, attention_source, pool_tile
from ...model import AttentionStore
from ..style import AUTOSIZE, BLUES, PLAIN_AXIS, visible_token
from .cells import label_angle, token_font_size, token_labels

LABELLED_SIDE = 64  # a zoom of at most this many rows and keys (weight by weight) names its tokens on the axes
MIN_LABEL_CELL = 9.0  # pixels: token labels need this much height each
TILE_SIDE_PX = 460  # pixels: the longer side of a zoomed tile's plot
QUERY_TITLE, KEY_TITLE = "query position (row)", "key position"
REGION_MAX = 1024  # rows and keys of a zoomed region, its weights recomputed exactly (a larger one is refused)


def tile_sizes(n_rows: int, n_keys: int, side: int = TILE_SIDE_PX) -> tuple[int, int, float]:
    """(width, height, cell) of a tile's plot: the longer side `side` pixels (more for a small zoom, so each
    token's label has MIN_LABEL_CELL), the other in proportion (at least 80)."""
    longest = max(n_rows, n_keys, 1)
    cell = side / longest
    if longest <= LABELLED_SIDE:
        cell = max(cell, MIN_LABEL_CELL)
    return max(80, round(cell * n_keys)), max(80, round(cell * n_rows)), cell


def zoom_labelled(rows: tuple[int, int], keys: tuple[int, int]) -> bool:
    """Whether a zoom of these rows and keys names its tokens on the axes (at most LABELLED_SIDE a side)."""
    return max(rows[1] - rows[0], keys[1] - keys[0]) <= LABELLED_SIDE


def _position_axis(tokens: Sequence[str] | None, start: int, title: str, cell: float, *, horizontal: bool,
                   large: bool) -> alt.Axis:
    if tokens is None:
        return alt.Axis(title=title, format=",d", tickMinStep=1, labelOverlap=True, **PLAIN_AXIS)
    font = token_font_size(cell, large)
    angle = label_angle(tokens, cell, font) if horizontal else 0
    # the label is read by position from the tokens' parameter (data): the expression holds only its name and a number
    limit = 2 * cell if horizontal and not angle else 80
    return alt.Axis(title=title, labelExpr=f"{token_labels(tokens).name}[datum.value - {start}]", labelAngle=angle,
                    labelFontSize=font, labelLimit=limit, labelOverlap=False, labelFlush=False, **PLAIN_AXIS)


def zoom_chart(title: str, rows: tuple[int, int], keys: tuple[int, int], tokens: Sequence[str] | None = None, *,
               side: int = TILE_SIDE_PX, large: bool = False) -> alt.LayerChart | alt.Chart:
    """A zoomed tile's chart, its data to be handed beside it (`ui`: Arrow): cells with row, row_end, key, key_end
    (token positions, end exclusive) and weight; a small zoom (`zoom_labelled`; `tokens` the input's labels) also
    row_token and key_token. Axes in token positions; a small zoom's ticks are its tokens."""
    (r0, r1), (k0, k1) = rows, keys
    width, height, cell = tile_sizes(r1 - r0, k1 - k0, side)
    empty = pd.DataFrame({"row": [], "row_end": [], "key": [], "key_end": [], "weight": []})
    tooltip = [alt.Tooltip("row:Q", title="query #"), alt.Tooltip("key:Q", title="key #"),
               alt.Tooltip("weight:Q", format=".4g", title="weight")]
    color = alt.Color("weight:Q", scale=alt.Scale(range=list(BLUES)), title="weight",
                      legend=alt.Legend(format=".2g", gradientLength=min(160, height)))
    if tokens is None or not zoom_labelled(rows, keys):
        x = alt.X("key:Q", scale=alt.Scale(domain=[k0, k1], nice=False, zero=False),
                  axis=_position_axis(None, k0, KEY_TITLE, cell, horizontal=True, large=large))
        y = alt.Y("row:Q", scale=alt.Scale(domain=[r0, r1], nice=False, zero=False, reverse=True),
                  axis=_position_axis(None, r0, QUERY_TITLE, cell, horizontal=False, large=large))
        return alt.Chart(empty, title=title, width=width, height=height, autosize=AUTOSIZE).mark_rect().encode(
            x=x, x2="key_end:Q", y=y, y2="row_end:Q", color=color, tooltip=tooltip)
    row_tokens = [visible_token(t) for t in tokens[r0:r1]]
    key_tokens = [visible_token(t) for t in tokens[k0:k1]]
    x = alt.X("key:O", scale=alt.Scale(domain=list(range(k0, k1))),
              axis=_position_axis(key_tokens, k0, f"{KEY_TITLE} ({k0:,}–{k1 - 1:,})", cell, horizontal=True,
                                  large=large))
    y = alt.Y("row:O", scale=alt.Scale(domain=list(range(r0, r1))),
              axis=_position_axis(row_tokens, r0, f"{QUERY_TITLE} ({r0:,}–{r1 - 1:,})", cell, horizontal=False,
                                  large=large))
    tooltip = [alt.Tooltip("row_token:N", title="query"), alt.Tooltip("key_token:N", title="key"), *tooltip]
    chart = alt.Chart(empty, title=title, width=width, height=height, autosize=AUTOSIZE).mark_rect().encode(
        x=x, y=y, color=color, tooltip=tooltip)
    return chart.add_params(*{p.name: p for p in (token_labels(row_tokens), token_labels(key_tokens))}.values())


def zoom_tokens(frame: pd.DataFrame, tokens: Sequence[str]) -> pd.DataFrame:
    """A small zoom's cells with their tokens as drawn (row_token, key_token), for the tooltip."""
    shown = [visible_token(t) for t in tokens]
    return frame.assign(row_token=[shown[int(r)] if r < len(shown) else "?" for r in frame["row"]],
                        key_token=[shown[int(k)] if k < len(shown) else "?" for k in frame["key"]])


def zoom_frame(source: AttentionSource | AttentionStore, layer: int, head: int | None, rows: tuple[int, int],
               keys: tuple[int, int], kind: str = "self") -> tuple[pd.DataFrame, str, Tensor]:
    """A region's cells (row, row_end, key, key_end, weight), their title and the weights (rows, keys), exact,
    through the source (a short input's maps or the store); a region wider than TILE_SIDE a side is drawn as the max
    of each cell of at most TILE_SIDE x TILE_SIDE."""
    (r0, r1), (k0, k1) = rows, keys
    w = attention_source(source).tile(kind, layer, head, slice(r0, r1), slice(k0, k1))
    cells, rb, kb = pool_tile(w, TILE_SIDE)  # rows and keys a cell
    r, k = torch.meshgrid(r0 + rb * torch.arange(cells.shape[0]), k0 + kb * torch.arange(cells.shape[1]),
                          indexing="ij")
    frame = pd.DataFrame({"row": r.reshape(-1).numpy(), "key": k.reshape(-1).numpy(),
                          "weight": cells.reshape(-1).double().numpy()})
    frame["row_end"], frame["key_end"] = (frame["row"] + rb).clip(upper=r1), (frame["key"] + kb).clip(upper=k1)
    drawn = "exact weights" if rb * kb == 1 else f"exact weights, the max of each {rb} × {kb} cell"
    return frame, f"Rows {r0:,}–{r1 - 1:,} × keys {k0:,}–{k1 - 1:,}: {drawn}", w


def zoom_spec(title: str, rows: tuple[int, int], keys: tuple[int, int], tokens: Sequence[str] | None = None, *,
              side: int = TILE_SIDE_PX, large: bool = False) -> dict[str, Any]:
    """The zoomed region's Vega-Lite spec without its data (handed to Streamlit beside it, as Arrow: tens of
    thousands of cells written into the spec as JSON took most of a zoom's time); axes in token positions, a small
    region's ticks its `tokens`."""
    spec = zoom_chart(title, rows, keys, tokens, side=side, large=large).to_dict(validate=False)
    spec.pop("datasets", None)
    spec.pop("data", None)
    return spec
