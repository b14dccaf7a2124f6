"""The map's cells mode: every weight a cell, one large heatmap or every layer x head as small multiples.

Rows are queries (y axis) and columns keys (x axis); axes are token positions labelled with the tokens, so
repeated tokens keep their own row or column. See `chart_style` for the shared conventions (head -1 = mean).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Collection, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from ...decode import ALL_TITLES as KIND_TITLES  # every family's kinds
from ...decode import MEAN_HEAD, AttentionTrace, head_label, hidden_note
from ..style import (
    AUTOSIZE,
    BLUES,
    GOLD_COLOR,
    HIGHLIGHT_COLOR,
    MASKED_COLOR,
    NOT_REACHED_COLOR,
    PLAIN_AXIS,
    counted,
    readable_piece,
    text_width,
    visible_token,
)
from ..window import MIN_MAP_CELL, check_window, fit_keys, window_title

MAX_GRID_CELLS = 400_000  # more rect marks than this make the browser crawl
_AXIS_NAMES = {"encoder_self": ("source token", "source token"),
               "decoder_self": ("decoder input (target)", "decoder input (target)"),
               "cross": ("decoder input (target)", "source token"),
               "self": ("prompt or generated token", "prompt or generated token")}
_ROTATED_LABEL_LIMIT = 120  # pixels; a longer token is cut with "…" (the tooltip shows it whole)


class ChartTooLargeError(ValueError):
    """The requested chart has too many cells to draw; ask for fewer layers or a shorter input."""


def axis_titles(kind: str) -> tuple[str, str]:
    """(y title, x title) for a kind, e.g. ("query: decoder input (target)", "key: source token")."""
    query, key = _AXIS_NAMES[kind]
    return f"query: {query}", f"key: {key}"


def shows_pieces(trace: AttentionTrace, kind: str) -> bool:
    """True when some token of the kind is drawn differently from its raw piece (byte-level BPE decoded), so the
    tooltips name the raw piece too."""
    return any(readable_piece(t) != t for tokens in trace.labels(kind) for t in tokens)


def matrix_frame(trace: AttentionTrace, kind: str, layer: int, head: int | None, max_row: int | None = None,
                 visible: bool = True, keys: tuple[int, int] | None = None) -> pd.DataFrame:
    """`AttentionTrace.matrix_frame` ready to draw: tokens made visible, a weight text for tooltips, rows past
    max_row and keys outside the `keys` window (start, stop) left out; hidden keys drawn as masked."""
    if max_row is not None and max_row < 0:
        raise ValueError(f"max_row must be >= 0, got {max_row}")
    frame = trace.matrix_frame(kind, layer, head)
    hidden = trace.hidden(kind).numpy().ravel()
    if hidden.any():
        frame["masked"] = frame["masked"].to_numpy() | hidden
    if visible:
        raw = shows_pieces(trace, kind)
        for axis, tokens in zip(("query", "key"), trace.labels(kind), strict=True):
            if raw:
                frame[f"{axis}_piece"] = frame[f"{axis}_token"]
            shown = np.asarray([visible_token(t) for t in tokens], dtype=object)
            frame[f"{axis}_token"] = shown[frame[f"{axis}_index"].to_numpy()]
    frame["weight_text"] = np.where(hidden, "hidden", np.where(frame["masked"], "masked",
                                                               frame["weight"].map("{:.3f}".format)))
    if max_row is not None:
        frame = frame[frame["query_index"] <= max_row].reset_index(drop=True)
    if keys is not None:
        start, stop = check_window(keys, trace.axis_sizes(kind)[1])
        frame = frame[frame["key_index"].between(start, stop - 1)].reset_index(drop=True)
    return frame


def label_angle(tokens: Sequence[str], cell: float, font_size: float) -> int:
    """0 when neighbouring x-axis labels fit side by side in cells `cell` pixels wide, else -45 (or -90 if tiny)."""
    widths = [text_width(visible_token(t), font_size) for t in tokens]
    crowded = any((a + b) / 2 + 2 > cell for a, b in zip(widths, widths[1:], strict=False))
    if not crowded:
        return 0
    return -45 if cell >= 14 else -90


def token_font_size(cell: float, large: bool = False) -> int:
    """The token labels' font size for cells `cell` pixels wide: 11 px at most, smaller for small cells; with `large`
    (presenter mode, for a projector) half the cell, up to 18 px."""
    if large and cell >= 22:
        return min(18, round(cell / 2))
    return 11 if cell >= 14 else 9 if cell >= 11 else 8


def token_labels(tokens: Sequence[str]) -> alt.Parameter:
    """The tokens as drawn, held as a parameter's value: an axis reads its label by position from it, so a token
    (`if`, a quote, `</script>`) is data and never part of a Vega expression. Named by its content, so two axes with
    the same tokens share it and a chart's spec stays the same while its data changes."""
    labels = [visible_token(t) for t in tokens]
    digest = hashlib.sha1(json.dumps(labels).encode()).hexdigest()[:12]
    return alt.param(name=f"tokens_{digest}", value=labels)


def with_token_labels(chart: alt.TopLevelMixin, *token_lists: Sequence[str]) -> alt.TopLevelMixin:
    """`chart` with the label parameters its token axes read (`_token_axis`), each declared once."""
    params = {p.name: p for p in (token_labels(tokens) for tokens in token_lists)}
    return chart.add_params(*params.values())


def _token_axis(tokens: Sequence[str], cell: float, title: str | None, *, horizontal: bool,
                large: bool = False) -> alt.Axis:
    """An ordinal position axis whose labels are the tokens (so repeated tokens keep their own column), read from
    the chart's `token_labels` parameter (add it with `with_token_labels`)."""
    font_size = token_font_size(cell, large)
    angle = label_angle(tokens, cell, font_size) if horizontal else 0
    while angle and font_size > 11:  # a smaller label that fits level reads better than a large rotated one
        font_size = max(11, font_size - 2)
        angle = label_angle(tokens, cell, font_size)
    limit = 2 * cell if horizontal and angle == 0 else _ROTATED_LABEL_LIMIT
    show = cell >= 9  # below this, labels would overprint each other: the tooltip still names each token
    # labelFlush off: Streamlit's chart theme turns it on, which left-aligns the first label at its tick (and
    # right-aligns the last), so a long first token ran into the second one
    return alt.Axis(title=title, labels=show, labelExpr=f"{token_labels(tokens).name}[datum.value]",
                    labelAngle=angle, labelFontSize=font_size, labelLimit=limit, labelOverlap=False,
                    labelFlush=False, titleFontSize=max(11, font_size), **PLAIN_AXIS)


def _color_scale(fixed_scale: bool, weights: pd.Series) -> alt.Scale:
    if fixed_scale or weights.empty:
        return alt.Scale(range=list(BLUES), domain=[0.0, 1.0])
    low, high = float(weights.min()), float(weights.max())
    return alt.Scale(range=list(BLUES), domain=[low, high if high > low else low + 1e-6])


# the tooltips' positions count from 1, as every panel, picker and caption does (the data's indices stay 0-based)
_POSITIONS = {"query_position": "datum.query_index + 1", "key_position": "datum.key_index + 1"}


def _map_encoding(trace: AttentionTrace, kind: str, cell: float, scale: alt.Scale, *, large: bool = False,
                  titled: bool = True, keys: tuple[int, int] | None = None, row: float | None = None
                  ) -> dict[str, Any]:
    """x/y/color/tooltip encodings of a heatmap whose axes stay fixed to the full (queries, keys) grid, or to the
    window of keys (start, stop); `row`: the rows' height where it differs from the cell's width."""
    row = cell if row is None else row
    q_tokens, k_tokens = trace.labels(kind)
    k_start, k_stop = check_window(keys, len(k_tokens))
    y_title, x_title = axis_titles(kind) if titled else (None, None)
    # Conditions and channels are built as Altair objects, not shorthand strings or `alt.when` chains: Altair turns
    # those into objects with `from_dict`, which re-hashes its ~600 schema classes each time (~6 ms a channel).
    color = alt.Color("weight:Q", scale=scale, title="weight",
                      condition={"test": "datum.masked", "value": MASKED_COLOR},
                      legend=alt.Legend(gradientLength=min(160, max(80, row * len(q_tokens))), format=".1f"))
    return dict(
        x=alt.X("key_index:O", scale=alt.Scale(domain=list(range(k_start, k_stop))),
                axis=_token_axis(k_tokens, cell, x_title, horizontal=True, large=large)),
        y=alt.Y("query_index:O", scale=alt.Scale(domain=list(range(len(q_tokens)))),
                axis=_token_axis(q_tokens, row, y_title, horizontal=False, large=large)),
        color=color,
        tooltip=[alt.Tooltip("query_token:N", title="query"), alt.Tooltip("key_token:N", title="key"),
                 alt.Tooltip("weight_text:N", title="weight"), alt.Tooltip("query_position:Q", title="query #"),
                 alt.Tooltip("key_position:Q", title="key #"),
                 *([alt.Tooltip("query_piece:N", title="query piece"), alt.Tooltip("key_piece:N", title="key piece")]
                   if shows_pieces(trace, kind) else [])],
    )


def _view(max_row: int | None) -> alt.ViewBackground:
    """No frame; a step-through (max_row set) shows the rows it has not reached as a neutral band."""
    if max_row is None:
        return alt.ViewBackground(stroke=None)
    return alt.ViewBackground(stroke=None, fill=NOT_REACHED_COLOR)


def _cell_size(n_queries: int, n_keys: int, size: float) -> float:
    return float(min(max(size / max(n_queries, n_keys, 1), 12.0), 44.0))


def _map_title(trace: AttentionTrace, kind: str, layer: int, head: int | None) -> str:
    which = f"mean of {counted(trace.n_heads, 'head')}" if head is None else f"head {head + 1}"
    return f"{KIND_TITLES[kind]} · layer {layer + 1} · {which}"


def attention_heatmap(trace: AttentionTrace, kind: str, layer: int, head: int | None = None, *,
                      fixed_scale: bool = True, gold: Sequence[tuple[int, int]] = (),
                      highlight_row: int | None = None, max_row: int | None = None, size: int = 420,
                      title: str | None = None, large_labels: bool = False, keys: tuple[int, int] | None = None,
                      max_width: int | None = None, row_height: float | None = None,
                      min_cell: float = MIN_MAP_CELL) -> alt.LayerChart:
    """One map, queries down and keys across, with tooltips; masked cells grey; gold cells and a row outlined.

    Always a layered chart: layer 0 is the heatmap (its data is the tidy map), then the outlines if any.

    `gold` cells outside the drawn rows are skipped (a greedy output may be shorter than the reference).
    `max_row` draws rows 0..max_row only, on the full fixed axes over a neutral background, so step-through
    does not move the chart and the rows still to come read as "not yet".
    `title`: None for "<kind> · layer · head", "" for none (a page that shows it beside the chart).
    `large_labels`: token labels and title that grow with the cells (presenter mode).
    `keys`: a window of key positions (start, stop), 0-based, stop exclusive; `max_width`: the widest the plotting
    area may be, in pixels: cells shrink down to `MIN_MAP_CELL`, then only the keys that fit from the window's
    start are drawn (the title says "keys 101–200 of 500"). Hidden keys (`hide_tokens`) are said in the subtitle.
    `row_height`: the rows' height in pixels where it is less than the cell's width (a long map within a screen's
    height: its columns stay wide enough to point at, its rows labelled only while they are tall enough).
    `min_cell`: the narrowest the columns may get before the window of keys is cut (presenter mode keeps a long
    input's keys whole beside its side column with columns under `MIN_MAP_CELL`).
    """
    q, n_keys = trace.axis_sizes(kind)
    k_start, k_stop = check_window(keys, n_keys)
    cell, k_start, k_stop = fit_keys(n_keys, _cell_size(q, k_stop - k_start, size), max_width, (k_start, k_stop),
                                     min_cell)
    window = (k_start, k_stop)
    frame = matrix_frame(trace, kind, layer, head, max_row, keys=window)
    k = k_stop - k_start
    scale = _color_scale(fixed_scale, frame.loc[~frame["masked"], "weight"])
    row_px = cell if row_height is None else min(cell, max(1.0, float(row_height)))
    enc = _map_encoding(trace, kind, cell, scale, large=large_labels, keys=window, row=row_px)
    heat = (alt.Chart(frame).transform_calculate(**_POSITIONS)
            .mark_rect(stroke="white", strokeWidth=0.5 if row_px >= 14 else 0).encode(**enc))
    layers: list[alt.Chart] = [heat]
    last_row = q - 1 if max_row is None else min(max_row, q - 1)
    cells = [(int(r), int(c)) for r, c in gold if 0 <= r <= last_row and k_start <= c < k_stop]
    if cells:
        gold_frame = pd.DataFrame(cells, columns=["query_index", "key_index"])
        layers.append(alt.Chart(gold_frame).mark_rect(filled=False, stroke=GOLD_COLOR, strokeWidth=2.5)
                      .encode(x=enc["x"], y=enc["y"]))
    if highlight_row is not None:
        if not 0 <= highlight_row < q:
            raise IndexError(f"highlight_row {highlight_row} is outside the {q} query rows")
        row = pd.DataFrame({"query_index": [highlight_row]})
        layers.append(alt.Chart(row).mark_rect(filled=False, stroke=HIGHLIGHT_COLOR, strokeWidth=2.5)
                      .encode(y=enc["y"]))
    heading = (_map_title(trace, kind, layer, head) if title is None else title)
    heading += window_title(k_start, k_stop, n_keys) if heading else ""
    note = hidden_note(trace, kind)
    chart = alt.layer(*layers).properties(
        width=cell * k, height=row_px * q, view=_view(max_row), autosize=AUTOSIZE,
        title=alt.TitleParams(heading, anchor="start", fontSize=max(14, token_font_size(cell, large_labels) + 3),
                              **({"subtitle": note, "subtitleColor": "#555"} if note else {})))
    return with_token_labels(chart, *trace.labels(kind))


_CLICK_HINTS = {"select": "click a panel to select it, double-click to clear",
                "switch": "click a head's panel to switch it off, click again to switch it back on"}


def attention_grid(trace: AttentionTrace, kind: str, *, layers: Sequence[int] | None = None,
                   max_row: int | None = None, cell: int = 140, fixed_scale: bool = True,
                   off: Collection[tuple[int, int]] = (), clicks: str = "select",
                   keys: tuple[int, int] | None = None) -> alt.FacetChart:
    """All layers x heads (plus a "mean" column) as small multiples; click a panel to select it.

    `off`: (layer, head) pairs switched off (ablated) on the page; their panel headers say "off".
    `clicks`: what the page does with a click, for the subtitle: "select" (open the panel) or "switch" (the head off).
    `keys`: a window of key positions (start, stop) for long inputs; the title says which keys are drawn.

    The chart carries a point selection named "cell" over the fields layer and head (head -1 = mean); read it
    back with `selected_panel(st.altair_chart(chart, on_select="rerun", key=...))`.
    Raises ChartTooLargeError rather than drop a layer or head when the grid would be too big to draw.
    """
    n_layers = trace.n_layers(kind)
    layer_list = list(range(n_layers)) if layers is None else [int(x) for x in layers]
    for layer in layer_list:
        if not 0 <= layer < n_layers:
            raise IndexError(f"{kind} has {n_layers} layer(s); layer {layer} does not exist")
    if not layer_list:
        raise ValueError("attention_grid needs at least one layer")
    if clicks not in _CLICK_HINTS:
        raise ValueError(f"clicks must be one of {', '.join(_CLICK_HINTS)}, not {clicks!r}")
    q, n_keys = trace.axis_sizes(kind)
    k_start, k_stop = check_window(keys, n_keys)
    k = k_stop - k_start
    heads: list[int | None] = [*range(trace.n_heads), None]
    rows = min(q, max_row + 1 if max_row is not None else q)
    if len(layer_list) * len(heads) * rows * k > MAX_GRID_CELLS:
        raise ChartTooLargeError(f"{len(layer_list)} layer(s) x {len(heads)} panels of {rows}x{k} cells is too "
                                 "many to draw; choose fewer layers, a window of keys or a shorter input")
    off = {(int(layer), int(head)) for layer, head in off}

    def panel(layer: int, head: int | None) -> str:
        return head_label(head, layer) + (" · off" if head is not None and (layer, head) in off else "")

    frames = []
    for layer in layer_list:
        for head in heads:
            frame = matrix_frame(trace, kind, layer, head, max_row, keys=(k_start, k_stop))
            frame.insert(0, "layer", layer)
            frame.insert(1, "head", MEAN_HEAD if head is None else head)
            frame.insert(2, "panel", panel(layer, head))
            frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    step = cell / max(q, k)
    y_title, x_title = axis_titles(kind)
    enc = _map_encoding(trace, kind, step, _color_scale(fixed_scale, data.loc[~data["masked"], "weight"]),
                        titled=False, keys=(k_start, k_stop))
    enc["tooltip"] = [alt.Tooltip("panel:N", title="panel"), *enc["tooltip"]]
    selection = alt.selection_point(name="cell", fields=["layer", "head"], on="click", toggle=False,
                                    clear="dblclick")
    panels = [panel(layer, head) for layer in layer_list for head in heads]
    base = (alt.Chart(data).transform_calculate(**_POSITIONS).mark_rect().encode(**enc, opacity=alt.OpacityValue(
        0.3, condition={"param": selection.name, "value": 1.0}))
            .add_params(selection).properties(width=step * k, height=step * q, view=_view(max_row)))
    grid = base.facet(
        facet=alt.Facet("panel:N", sort=panels, title=None,
                        header=alt.Header(labelFontSize=12, labelFontWeight="bold", labelPadding=4)),
        columns=len(heads), spacing=10, autosize=AUTOSIZE,
        title=alt.TitleParams(f"{KIND_TITLES[kind]} · {counted(len(layer_list), 'layer')} × "
                              f"{counted(trace.n_heads, 'head')} and mean" + window_title(k_start, k_stop, n_keys),
                              subtitle=" · ".join(filter(None, [f"rows = {y_title}", f"columns = {x_title}",
                                                                _CLICK_HINTS[clicks], hidden_note(trace, kind)])),
                              anchor="start", fontSize=14, subtitleColor="#555", subtitlePadding=6),
    )
    return with_token_labels(grid, *trace.labels(kind))


def selected_panel(event: Mapping[str, Any] | None) -> tuple[int, int | None] | None:
    """(layer, head) clicked in an `attention_grid` from Streamlit's selection state; head None is the mean."""
    if not event:
        return None
    points = (event.get("selection") or {}).get("cell") or []
    if not points or not isinstance(points, list) or not isinstance(points[0], Mapping):
        return None
    layer, head = points[0].get("layer"), points[0].get("head")
    if layer is None or head is None:
        return None
    return int(layer), None if int(head) == MEAN_HEAD else int(head)
