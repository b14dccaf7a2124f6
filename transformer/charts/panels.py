"""Every layer x head as panels of one chart with shared data: one dataset, one rect mark, one colour scale.

Altair's facet (`attention_grid`) gives every panel its own scales, axes and dataflow; at 12 layers x 17 panels the
browser spends seconds building them. Here each cell's pixel position is computed once (panel column and row from
head and layer, then key and query inside the panel), so 200 panels cost what one large heatmap costs. Tokens are
named in the tooltip (looked up by position in the spec, not repeated in every row). See bench/app/grid_render.py.
"""
from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Collection, Sequence

import altair as alt
import numpy as np
import pandas as pd
import torch

from ..analysis import whole_maps
from ..decode import ALL_TITLES as KIND_TITLES  # every family's kinds
from ..decode import MEAN_HEAD, AttentionTrace, head_label
from .attention.cells import _CLICK_HINTS, MAX_GRID_CELLS, ChartTooLargeError, axis_titles
from .style import AUTOSIZE, BLUES, MASKED_COLOR, NOT_REACHED_COLOR, counted, visible_token
from .window import check_window, window_title

PANEL_GAP = 10  # pixels between panels, across and down
LABEL_EM = 0.7  # a bold label character's width, in font sizes (the header font is picked to fit the panel)
HEADER = 16  # pixels above each panel for its "L1 H1" label
RENDERERS = ("canvas", "svg")
DRAWS = ("images", "rects")
MAX_IMAGE_CELLS = 2_000_000  # panels drawn as images: past this the PNGs alone weigh megabytes


def max_grid_cells(draw: str = "images") -> int:
    """The most cells (layers x panels x rows x keys) `attention_panels` draws with `draw`."""
    return MAX_IMAGE_CELLS if draw == "images" else MAX_GRID_CELLS


def layers_that_fit(trace: AttentionTrace, kind: str, max_row: int | None = None, draw: str = "images") -> int:
    """How many layers of `kind` one `attention_panels` chart can draw (0: not even one at this input length)."""
    q, k = trace.axis_sizes(kind)
    rows = q if max_row is None else min(q, max_row + 1)
    return min(trace.n_layers(kind), max_grid_cells(draw) // max(1, (trace.n_heads + 1) * rows * k))


def panels_frame(trace: AttentionTrace, kind: str, layers: Sequence[int], max_row: int | None = None,
                 keys: tuple[int, int] | None = None) -> pd.DataFrame:
    """One row per drawn cell of every panel: layer, head (MEAN_HEAD for the mean), q, k, w (weight, 4 decimals)
    and masked (0/1); rows past max_row and keys outside the window `keys` (start, stop) left out."""
    start, stop = check_window(keys, trace.axis_sizes(kind)[1])
    t = trace.weights(kind).detach().float().cpu()[list(layers)][..., start:stop]  # (L, H, Q, K)
    w = np.concatenate([t.numpy(), t.mean(1, keepdim=True).numpy()], axis=1)  # (L, H + 1, Q, K)
    n_layers, n_panels, q, k = w.shape
    rows = q if max_row is None else min(q, max_row + 1)
    w = w[:, :, :rows]
    li, hi, qi, ki = np.meshgrid(np.asarray(layers), np.arange(n_panels), np.arange(rows), np.arange(start, stop),
                                 indexing="ij")
    hi = np.where(hi == n_panels - 1, MEAN_HEAD, hi)
    masked = np.broadcast_to(trace.masked(kind).numpy()[:rows, start:stop], w.shape)
    return pd.DataFrame({"layer": li.ravel().astype(np.int16), "head": hi.ravel().astype(np.int16),
                         "q": qi.ravel().astype(np.int16), "k": ki.ravel().astype(np.int16),
                         "w": np.round(w.ravel().astype(np.float64), 4), "masked": masked.ravel().astype(np.int8)})


def _hex_rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def png_bytes(rgb: np.ndarray) -> bytes:
    """A (height, width, 3) uint8 array as PNG bytes (no imaging library needed)."""
    height, width, _ = rgb.shape
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)], axis=1).tobytes()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def blues_rgb(weights: np.ndarray, domain: Sequence[float], masked: np.ndarray | None = None) -> np.ndarray:
    """Weights coloured as the charts' Blues scale over `domain` (masked cells grey): (..., 3) uint8."""
    stops = np.linspace(domain[0], domain[1], len(BLUES))
    table = np.array([_hex_rgb(c) for c in BLUES], dtype=np.float32)
    rgb = np.stack([np.interp(weights, stops, table[:, c]) for c in range(3)], -1).round().astype(np.uint8)
    if masked is not None:
        rgb[np.broadcast_to(masked, weights.shape)] = _hex_rgb(MASKED_COLOR)
    return rgb


def _domain(trace: AttentionTrace, kind: str, layers: Sequence[int], rows: int, fixed_scale: bool,
            window: tuple[int, int]) -> list[float]:
    """The colour scale's domain: 0-1, or the drawn weights' lowest to highest (masked cells left out)."""
    if fixed_scale:
        return [0.0, 1.0]
    start, stop = window
    w = trace.weights(kind).detach().float().cpu()[list(layers)][..., start:stop]
    w = torch.cat([w, w.mean(1, keepdim=True)], 1)[:, :, :rows]
    shown = w[:, :, ~trace.masked(kind)[:rows, start:stop]]
    if shown.numel() == 0:
        return [0.0, 1.0]
    low, high = float(shown.min()), float(shown.max())
    return [low, high if high > low else low + 1e-6]


def panel_images(trace: AttentionTrace, kind: str, layers: Sequence[int], rows: int, domain: Sequence[float],
                 step: float, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """One PNG per panel (rows 0..rows-1, the keys of `window` (start, stop) or all, each cell `step` pixels or a
    little more), as data URLs: layer, head, panel, url."""
    start, stop = check_window(window, trace.axis_sizes(kind)[1])
    t = trace.weights(kind).detach().float().cpu()[list(layers)][..., start:stop]
    w = torch.cat([t, t.mean(1, keepdim=True)], 1)[:, :, :rows].numpy()  # (L, H + 1, rows, K)
    rgb = blues_rgb(w, domain, trace.masked(kind).numpy()[:rows, start:stop])
    scale = max(1, int(np.ceil(step)))  # whole pixels per cell, so the browser only shrinks the image a little
    found = []
    for i, layer in enumerate(layers):
        for j in range(w.shape[1]):
            head = MEAN_HEAD if j == w.shape[1] - 1 else j
            png = png_bytes(rgb[i, j].repeat(scale, 0).repeat(scale, 1))
            found.append({"layer": layer, "head": head, "panel": head_label(head, layer),
                          "url": "data:image/png;base64," + base64.b64encode(png).decode()})
    return pd.DataFrame(found)


def _token_lookup(tokens: Sequence[str], name: str) -> alt.LookupData:
    """The tokens as data, looked up by position: a token is a value, never part of a Vega expression."""
    table = pd.DataFrame({"position": range(len(tokens)), name: [visible_token(t) for t in tokens]})
    return alt.LookupData(data=table, key="position", fields=[name])


def attention_panels(trace: AttentionTrace, kind: str, *, layers: Sequence[int] | None = None,
                     max_row: int | None = None, cell: int = 140, fixed_scale: bool = True,
                     off: Collection[tuple[int, int]] = (), clicks: str = "select", draw: str = "images",
                     renderer: str | None = None, keys: tuple[int, int] | None = None) -> alt.LayerChart:
    """All chosen layers x heads (plus a "mean" column) as panels of one chart; click a panel to select it.

    Same arguments and selection as `attention_grid` (a point selection named "cell" over layer and head, read back
    with `selected_panel`; ChartTooLargeError past `max_grid_cells(draw)` rather than a dropped layer), without
    per-panel axes. `draw`: "images" (one PNG per panel, 204 marks at 12 x 16 heads; the tooltip names the panel)
    or "rects" (one mark per cell; the tooltip names each cell's tokens, positions and weight).
    `renderer`: what the browser draws with, written where Streamlit reads it (usermeta.embedOptions); by default
    SVG for images (each panel keeps its aria-label) and canvas for rects (SVG with 10^5 cells takes seconds).
    `keys`: a window of key positions (start, stop), 0-based, stop exclusive, drawn in every panel.
    """
    whole_maps(trace, "model_view", kind)  # every head's whole map: refused in one place past what fits
    n_layers = trace.n_layers(kind)
    layer_list = list(range(n_layers)) if layers is None else [int(x) for x in layers]
    if not layer_list:
        raise ValueError("attention_panels needs at least one layer")
    for layer in layer_list:
        if not 0 <= layer < n_layers:
            raise IndexError(f"{kind} has {n_layers} layer(s); layer {layer} does not exist")
    if clicks not in _CLICK_HINTS:
        raise ValueError(f"clicks must be one of {', '.join(_CLICK_HINTS)}, not {clicks!r}")
    if draw not in DRAWS:
        raise ValueError(f"draw must be one of {', '.join(DRAWS)}, not {draw!r}")
    renderer = renderer or ("svg" if draw == "images" else "canvas")
    if renderer not in RENDERERS:
        raise ValueError(f"renderer must be one of {', '.join(RENDERERS)}, not {renderer!r}")
    q, n_keys = trace.axis_sizes(kind)
    window = check_window(keys, n_keys)
    k = window[1] - window[0]
    n_panels = trace.n_heads + 1
    rows = q if max_row is None else min(q, max_row + 1)
    if len(layer_list) * n_panels * rows * k > max_grid_cells(draw):
        raise ChartTooLargeError(f"{len(layer_list)} layer(s) x {n_panels} panels of {rows}x{k} cells is too "
                                 "many to draw; choose fewer layers or a shorter input")
    step = cell / max(q, k)
    width, height = step * k, step * q
    across, down = width + PANEL_GAP, height + HEADER + PANEL_GAP
    row_of = {layer: i for i, layer in enumerate(layer_list)}
    selection = alt.selection_point(name="cell", fields=["layer", "head"], on="click", toggle=False,
                                    clear="dblclick")
    opacity = alt.OpacityValue(0.3, condition={"param": selection.name, "value": 1.0})
    domain = _domain(trace, kind, layer_list, rows, fixed_scale, window)
    colour = alt.Color("w:Q", scale=alt.Scale(range=list(BLUES), domain=domain), title="weight",
                       condition={"test": "datum.masked", "value": MASKED_COLOR},
                       legend=alt.Legend(gradientLength=160, format=".1f"))
    off = {(int(layer), int(head)) for layer, head in off}
    labels = pd.DataFrame([{"layer": layer, "head": MEAN_HEAD if h is None else h,
                            "panel": head_label(h, layer) + (" · off" if (layer, h) in off else ""),
                            "x": (n_panels - 1 if h is None else h) * across, "y": row_of[layer] * down}
                           for layer in layer_list for h in [*range(trace.n_heads), None]])
    if draw == "images":
        labels["url"] = panel_images(trace, kind, layer_list, rows, domain, step, window)["url"].to_numpy()
        cells = alt.Chart(labels).mark_image(width=step * k, height=step * rows, align="left", baseline="top",
                                             aspect=False, yOffset=HEADER).encode(
            x=alt.X("x:Q", scale=None, axis=None), y=alt.Y("y:Q", scale=None, axis=None), url="url:N",
            opacity=opacity, tooltip=[alt.Tooltip("panel:N", title="panel")],
            description=alt.Description("panel:N")).add_params(selection)  # its aria-label: "L1 H2", not the URL
        # the colour legend: two invisible cells carry the scale the images were coloured with
        legend = alt.Chart(pd.DataFrame({"w": domain, "masked": [0, 0]})).mark_rect(opacity=0).encode(color=colour)
        drawn: list[alt.Chart] = [cells, legend]
    else:
        data = panels_frame(trace, kind, layer_list, max_row, window)
        # the panel's row on the page: layers may be any subset, so look it up rather than subtract the first
        row_expr = f"{json.dumps({str(a): b for a, b in row_of.items()})}[datum.layer]"
        col_expr = f"datum.head < 0 ? {trace.n_heads} : datum.head"
        q_tokens, k_tokens = trace.labels(kind)
        cells = alt.Chart(data).transform_calculate(
            x=f"({col_expr}) * {across} + (datum.k - {window[0]}) * {step}",
            y=f"({row_expr}) * {down} + {HEADER} + datum.q * {step}",
            panel="'L' + (datum.layer + 1) + ' ' + (datum.head < 0 ? 'mean' : 'H' + (datum.head + 1))",
        ).transform_lookup(lookup="q", from_=_token_lookup(q_tokens, "query_token")).transform_lookup(
            lookup="k", from_=_token_lookup(k_tokens, "key_token"),
        ).transform_calculate(x2=f"datum.x + {step}", y2=f"datum.y + {step}", q_position="datum.q + 1",
                              k_position="datum.k + 1").mark_rect().encode(
            x=alt.X("x:Q", scale=None, axis=None), x2="x2:Q", y=alt.Y("y:Q", scale=None, axis=None), y2="y2:Q",
            color=colour, opacity=opacity,
            tooltip=[alt.Tooltip("panel:N", title="panel"), alt.Tooltip("query_token:N", title="query"),
                     alt.Tooltip("key_token:N", title="key"), alt.Tooltip("w:Q", title="weight", format=".3f"),
                     alt.Tooltip("q_position:Q", title="query #"), alt.Tooltip("k_position:Q", title="key #")],
        ).add_params(selection)
        drawn = [cells]
    # "L10 H10" in 11-px bold is ~48 px: narrower panels get a smaller font, so labels never run into each other
    longest = int(labels["panel"].str.len().max())
    font = max(7, min(11, int(across / (LABEL_EM * longest))))
    headers = alt.Chart(labels).mark_text(align="left", baseline="top", fontSize=font, fontWeight="bold",
                                          aria=False).encode(
        x=alt.X("x:Q", scale=None, axis=None), y=alt.Y("y:Q", scale=None, axis=None), text="panel:N")
    layers_drawn = [*drawn, headers]
    if max_row is not None and rows < q:  # the rows a step-through has not reached, as a neutral band
        band = pd.DataFrame([{"x": col * across, "x2": col * across + width,
                              "y": row_of[layer] * down + HEADER + rows * step, "y2": row_of[layer] * down + HEADER
                              + height} for layer in layer_list for col in range(n_panels)])
        layers_drawn.insert(0, alt.Chart(band).mark_rect(color=NOT_REACHED_COLOR).encode(
            x=alt.X("x:Q", scale=None, axis=None), x2="x2:Q", y=alt.Y("y:Q", scale=None, axis=None), y2="y2:Q"))
    y_title, x_title = axis_titles(kind)
    hover = "open a panel for its tokens" if draw == "images" else "hover a cell for its tokens"
    first, last = layer_list[0] + 1, layer_list[-1] + 1
    layer_text = (counted(n_layers, "layer") if layer_list == list(range(n_layers))
                  else f"layer {first} of {n_layers}" if len(layer_list) == 1
                  else f"layers {first}–{last} of {n_layers}" if layer_list == list(range(first - 1, last))
                  else f"{len(layer_list)} of {n_layers} layers")
    chart = alt.layer(*layers_drawn).properties(
        width=n_panels * across - PANEL_GAP, height=len(layer_list) * down - PANEL_GAP, autosize=AUTOSIZE,
        view=alt.ViewBackground(stroke=None),
        title=alt.TitleParams(f"{KIND_TITLES[kind]} · {layer_text} × {counted(trace.n_heads, 'head')} and mean"
                              + window_title(*window, n_keys),
                              subtitle=[f"rows = {y_title} · columns = {x_title}",  # two lines: one was cut
                                        f"{hover} · {_CLICK_HINTS[clicks]}"], anchor="start", fontSize=14,
                              subtitleColor="#555",
                              subtitlePadding=6))
    chart.usermeta = {"embedOptions": {"renderer": renderer}}
    return chart
