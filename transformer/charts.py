"""Chart builders: attention traces and training logs -> Altair / Plotly figures (pure functions, no Streamlit).

Conventions: rows are queries (y axis), columns are keys (x axis); positions are 0-based in data and 1-based in
labels ("L1 H1"); wherever a head number is stored, the mean over heads is head -1 (`MEAN_HEAD`). Tokens are
shown in a visible form (a space is "␣"); data frames for export (`timeline_frame`) keep the raw tokens.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .trace import KIND_TITLES, AttentionTrace

MEAN_HEAD = -1
# ColorBrewer Blues: white at 0, so a weight of 0 reads as "nothing" (Vega's "blues" scheme starts light blue).
BLUES = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
MASKED_COLOR = "#d4d4d4"
GOLD_COLOR = "#f28e2b"
HIGHLIGHT_COLOR = "#d62728"
BAR_COLOR, CHOSEN_COLOR = "#9ecae1", "#f28e2b"
LINE_COLORS = {"loss": "#1f77b4", "accuracy": "#2ca02c", "valid_loss": "#d62728", "valid_accuracy": "#ff7f0e",
               "exact_match": "#9467bd"}
# width/height are the plotting area (Streamlit's default "fit" would squeeze axes and titles into them).
_AUTOSIZE = alt.AutoSizeParams(type="pad", contains="padding")
MAX_GRID_CELLS = 400_000  # more rect marks than this make the browser crawl
_PLAIN_AXIS = dict(ticks=False, domain=False, labelPadding=4, titleFontWeight="normal", titleColor="#555")
_VISIBLE = {" ": "␣", "\t": "⇥", "\n": "⏎", "": "∅"}
_AXIS_NAMES = {"encoder_self": ("source token", "source token"),
               "decoder_self": ("decoder input (target)", "decoder input (target)"),
               "cross": ("decoder input (target)", "source token")}


class ChartTooLargeError(ValueError):
    """The requested chart has too many cells to draw; ask for fewer layers or a shorter input."""


class ChartExportError(RuntimeError):
    """A chart could not be rendered to PNG or SVG."""


def visible_token(token: str) -> str:
    """The token as drawn on an axis: whitespace and the empty string made visible."""
    return _VISIBLE.get(token, token.replace("\n", "⏎"))


def axis_titles(kind: str) -> tuple[str, str]:
    """(y title, x title) for a kind, e.g. ("query: decoder input (target)", "key: source token")."""
    query, key = _AXIS_NAMES[kind]
    return f"query: {query}", f"key: {key}"


def head_label(head: int | None) -> str:
    """ "H1".. for a 0-based head, "mean" for None or MEAN_HEAD."""
    return "mean" if head is None or head == MEAN_HEAD else f"H{head + 1}"


def _matrix_frame(trace: AttentionTrace, kind: str, layer: int, head: int | None, max_row: int | None = None,
                  visible: bool = True) -> pd.DataFrame:
    """One (queries, keys) map as a tidy frame; head None is the mean; rows past max_row are left out."""
    w = trace.matrix(kind, layer, head).detach().float().cpu().numpy()  # (Q, K)
    mask = trace.masked(kind).numpy()
    q_tokens, k_tokens = trace.labels(kind)
    if visible:
        q_tokens, k_tokens = [visible_token(t) for t in q_tokens], [visible_token(t) for t in k_tokens]
    q, k = w.shape
    qi, ki = np.repeat(np.arange(q), k), np.tile(np.arange(k), q)
    frame = pd.DataFrame({
        "query_index": qi, "query_token": np.asarray(q_tokens, dtype=object)[qi],
        "key_index": ki, "key_token": np.asarray(k_tokens, dtype=object)[ki],
        "weight": w.ravel(), "masked": mask.ravel(),
    })
    frame["weight_text"] = np.where(frame["masked"], "masked", frame["weight"].map("{:.3f}".format))
    if max_row is not None:
        if max_row < 0:
            raise ValueError(f"max_row must be >= 0, got {max_row}")
        frame = frame[frame["query_index"] <= max_row].reset_index(drop=True)
    return frame


def _token_axis(tokens: Sequence[str], cell: float, title: str, *, horizontal: bool) -> alt.Axis:
    """An ordinal position axis whose labels are the tokens (so repeated tokens keep their own column)."""
    labels = [visible_token(t) for t in tokens]
    too_wide = sum(len(t) * 7 > cell for t in labels)
    angle = 0
    if horizontal and too_wide * 4 > len(labels):  # a few wide specials ("</s>") may spill; many means rotate
        angle = -45 if cell >= 14 else -90
    show = cell >= 9  # below this, labels would overprint each other: the tooltip still names each token
    return alt.Axis(title=title, labels=show, labelExpr=f"{json.dumps(labels, ensure_ascii=False)}[datum.value]",
                    labelAngle=angle, labelFontSize=11 if cell >= 14 else 9 if cell >= 11 else 8,
                    labelLimit=cell + 4 if horizontal and angle == 0 else 110, labelOverlap=False, **_PLAIN_AXIS)


def _color_scale(fixed_scale: bool, weights: pd.Series) -> alt.Scale:
    if fixed_scale or weights.empty:
        return alt.Scale(range=list(BLUES), domain=[0.0, 1.0])
    low, high = float(weights.min()), float(weights.max())
    return alt.Scale(range=list(BLUES), domain=[low, high if high > low else low + 1e-6])


def _map_encoding(trace: AttentionTrace, kind: str, cell: float, scale: alt.Scale, *,
                  titled: bool = True) -> dict[str, Any]:
    """x/y/color/tooltip encodings of a heatmap whose axes stay fixed to the full (queries, keys) grid."""
    q_tokens, k_tokens = trace.labels(kind)
    y_title, x_title = axis_titles(kind) if titled else (None, None)
    color = alt.Color("weight:Q", scale=scale, title="weight",
                      legend=alt.Legend(gradientLength=min(160, max(80, cell * len(q_tokens))), format=".1f"))
    return dict(
        x=alt.X("key_index:O", scale=alt.Scale(domain=list(range(len(k_tokens)))),
                axis=_token_axis(k_tokens, cell, x_title, horizontal=True)),
        y=alt.Y("query_index:O", scale=alt.Scale(domain=list(range(len(q_tokens)))),
                axis=_token_axis(q_tokens, cell, y_title, horizontal=False)),
        color=alt.when("datum.masked").then(alt.value(MASKED_COLOR)).otherwise(color),
        tooltip=[alt.Tooltip("query_token:N", title="query"), alt.Tooltip("key_token:N", title="key"),
                 alt.Tooltip("weight_text:N", title="weight"), alt.Tooltip("query_index:Q", title="query #"),
                 alt.Tooltip("key_index:Q", title="key #")],
    )


def _cell_size(n_queries: int, n_keys: int, size: float) -> float:
    return float(min(max(size / max(n_queries, n_keys, 1), 12.0), 44.0))


def _map_title(trace: AttentionTrace, kind: str, layer: int, head: int | None) -> str:
    which = f"mean of {trace.n_heads} heads" if head is None else f"head {head + 1}"
    return f"{KIND_TITLES[kind]} · layer {layer + 1} · {which}"


def attention_heatmap(trace: AttentionTrace, kind: str, layer: int, head: int | None = None, *,
                      fixed_scale: bool = True, gold: Sequence[tuple[int, int]] = (),
                      highlight_row: int | None = None, max_row: int | None = None, size: int = 420,
                      title: str | None = None) -> alt.LayerChart:
    """One map, queries down and keys across, with tooltips; masked cells grey; gold cells and a row outlined.

    Always a layered chart: layer 0 is the heatmap (its data is the tidy map), then the outlines if any.

    `gold` cells outside the drawn rows are skipped (a greedy output may be shorter than the reference).
    `max_row` draws rows 0..max_row only, on the full fixed axes, so step-through does not move the chart.
    """
    frame = _matrix_frame(trace, kind, layer, head, max_row)
    q, k = trace.axis_sizes(kind)
    cell = _cell_size(q, k, size)
    scale = _color_scale(fixed_scale, frame.loc[~frame["masked"], "weight"])
    enc = _map_encoding(trace, kind, cell, scale)
    heat = alt.Chart(frame).mark_rect(stroke="white", strokeWidth=0.5 if cell >= 14 else 0).encode(**enc)
    layers: list[alt.Chart] = [heat]
    last_row = q - 1 if max_row is None else min(max_row, q - 1)
    cells = [(int(r), int(c)) for r, c in gold if 0 <= r <= last_row and 0 <= c < k]
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
    return alt.layer(*layers).properties(
        width=cell * k, height=cell * q, view=alt.ViewBackground(stroke=None), autosize=_AUTOSIZE,
        title=alt.TitleParams(title or _map_title(trace, kind, layer, head), anchor="start", fontSize=14))


def attention_grid(trace: AttentionTrace, kind: str, *, layers: Sequence[int] | None = None,
                   max_row: int | None = None, cell: int = 140, fixed_scale: bool = True) -> alt.FacetChart:
    """All layers x heads (plus a "mean" column) as small multiples; click a panel to select it.

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
    q, k = trace.axis_sizes(kind)
    heads: list[int | None] = [*range(trace.n_heads), None]
    rows = min(q, max_row + 1 if max_row is not None else q)
    if len(layer_list) * len(heads) * rows * k > MAX_GRID_CELLS:
        raise ChartTooLargeError(f"{len(layer_list)} layer(s) x {len(heads)} panels of {rows}x{k} cells is too "
                                 "many to draw; choose fewer layers or a shorter input")
    frames = []
    for layer in layer_list:
        for head in heads:
            frame = _matrix_frame(trace, kind, layer, head, max_row)
            frame.insert(0, "layer", layer)
            frame.insert(1, "head", MEAN_HEAD if head is None else head)
            frame.insert(2, "panel", f"L{layer + 1} {head_label(head)}")
            frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    step = cell / max(q, k)
    y_title, x_title = axis_titles(kind)
    enc = _map_encoding(trace, kind, step, _color_scale(fixed_scale, data.loc[~data["masked"], "weight"]),
                        titled=False)
    enc["tooltip"] = [alt.Tooltip("panel:N", title="panel"), *enc["tooltip"]]
    selection = alt.selection_point(name="cell", fields=["layer", "head"], on="click", toggle=False,
                                    clear="dblclick")
    panels = [f"L{layer + 1} {head_label(head)}" for layer in layer_list for head in heads]
    base = (alt.Chart(data).mark_rect().encode(**enc, opacity=alt.when(selection).then(alt.value(1.0))
                                                .otherwise(alt.value(0.3)))
            .add_params(selection).properties(width=step * k, height=step * q))
    return base.facet(
        facet=alt.Facet("panel:N", sort=panels, title=None,
                        header=alt.Header(labelFontSize=12, labelFontWeight="bold", labelPadding=4)),
        columns=len(heads), spacing=10, autosize=_AUTOSIZE,
        title=alt.TitleParams(f"{KIND_TITLES[kind]} · {len(layer_list)} layer(s) × {trace.n_heads} heads and mean",
                              subtitle=f"rows = {y_title} · columns = {x_title} · click a panel to select it, "
                                       "double-click to clear",
                              anchor="start", fontSize=14, subtitleColor="#555"),
    )


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


def _strip(tokens: Sequence[str], weights: Sequence[float], title: str, what: str) -> alt.LayerChart:
    """Tokens in a row, each cell shaded by its weight (0-1), the token printed on top."""
    if len(tokens) != len(weights):
        raise ValueError(f"{len(tokens)} tokens but {len(weights)} weights")
    labels = [visible_token(t) for t in tokens]
    frame = pd.DataFrame({"position": range(len(labels)), "token": labels,
                          "weight": [float(w) for w in weights]})
    frame["weight_text"] = frame["weight"].map("{:.3f}".format)
    width = max(26, 8 * max((len(t) for t in labels), default=1) + 12)
    base = alt.Chart(frame).encode(x=alt.X("position:O", axis=None,
                                           scale=alt.Scale(domain=list(range(len(labels))), paddingInner=0.08)))
    cells = base.mark_rect(stroke="#cfcfcf", strokeWidth=0.75, cornerRadius=3).encode(
        color=alt.Color("weight:Q", scale=alt.Scale(range=list(BLUES), domain=[0.0, 1.0]), legend=None),
        tooltip=[alt.Tooltip("token:N", title=what), alt.Tooltip("weight_text:N", title="weight"),
                 alt.Tooltip("position:Q", title="position")])
    text = base.mark_text(fontSize=13).encode(
        text="token:N", color=alt.when("datum.weight > 0.55").then(alt.value("white")).otherwise(alt.value("#222")),
        tooltip=[alt.Tooltip("token:N", title=what), alt.Tooltip("weight_text:N", title="weight")])
    chart = alt.layer(cells, text).properties(width=width * len(labels), height=34, autosize=_AUTOSIZE,
                                              view=alt.ViewBackground(stroke=None))
    return chart.properties(title=alt.TitleParams(title, anchor="start", fontSize=13)) if title else chart


def source_strip(tokens: Sequence[str], weights: Sequence[float], *, title: str = "") -> alt.LayerChart:
    """Source tokens in a row shaded by the attention one decoding step pays them (0-1 scale)."""
    return _strip(tokens, weights, title, "source token")


def decoder_row_chart(tokens: Sequence[str], weights: Sequence[float], *, title: str = "") -> alt.LayerChart:
    """The decoder self-attention row of one step over the prefix so far (same style as `source_strip`)."""
    return _strip(tokens, weights, title, "decoder input")


def alignment_table_chart(scores: pd.DataFrame) -> alt.LayerChart:
    """Layer x head heatmap of alignment scores with the values printed; head "mean", -1 or None is the mean."""
    missing = {"layer", "head", "score"} - set(scores.columns)
    if missing:
        raise ValueError(f"scores needs columns layer, head and score; missing {', '.join(sorted(missing))}")
    frame = scores[["layer", "head", "score"]].copy()
    frame["head_label"] = [h if isinstance(h, str) else head_label(None if pd.isna(h) else int(h))
                           for h in frame["head"]]
    frame["layer_label"] = [f"L{int(x) + 1}" for x in frame["layer"]]
    frame["score_text"] = frame["score"].map("{:.2f}".format)
    heads = sorted(set(frame["head_label"]) - {"mean"}, key=lambda h: int(h[1:]) if h[1:].isdigit() else 0)
    heads += ["mean"] if "mean" in set(frame["head_label"]) else []
    layers = [f"L{i + 1}" for i in sorted({int(x) for x in frame["layer"]})]
    fixed = frame["score"].between(0, 1).all()  # scores outside 0-1 (a custom metric) get a fitted scale
    scale = alt.Scale(range=list(BLUES), domain=[0.0, 1.0]) if fixed else alt.Scale(range=list(BLUES))
    base = alt.Chart(frame).encode(x=alt.X("head_label:N", sort=heads, title="head",
                                           axis=alt.Axis(labelAngle=0, orient="top", **_PLAIN_AXIS)),
                                   y=alt.Y("layer_label:N", sort=layers, title="layer",
                                           axis=alt.Axis(labelAngle=0, **_PLAIN_AXIS)))
    cells = base.mark_rect(stroke="white", strokeWidth=1.5).encode(
        color=alt.Color("score:Q", scale=scale, title="score",
                        legend=alt.Legend(gradientLength=max(60, 34 * len(layers)))),
        tooltip=[alt.Tooltip("layer_label:N", title="layer"), alt.Tooltip("head_label:N", title="head"),
                 alt.Tooltip("score:Q", format=".3f")])
    text = base.mark_text(fontSize=12).encode(
        text="score_text:N",
        color=alt.when("datum.score > 0.6").then(alt.value("white")).otherwise(alt.value("#222")))
    return alt.layer(cells, text).properties(width=56 * len(heads), height=34 * len(layers), autosize=_AUTOSIZE,
                                             view=alt.ViewBackground(stroke=None))


def head_stats(trace: AttentionTrace, kind: str) -> pd.DataFrame:
    """Per (layer, head) entropy (nats), mean row maximum and mean distance from the diagonal; head -1 = mean map.

    Averages are over query rows; masked cells are ignored. For cross-attention the diagonal is scaled,
    query q <-> key q*(S-1)/(T-1), so a monotonic alignment scores 0 even when T != S.
    The head -1 rows describe the mean-over-heads map (not the mean of the per-head numbers).
    """
    w = trace.weights(kind).detach().float().cpu()  # (L, H, Q, K)
    w = torch.cat([w, w.mean(1, keepdim=True)], dim=1)  # (L, H+1, Q, K)
    keep = ~trace.masked(kind)  # (Q, K)
    q, k = keep.shape
    w = w * keep
    q_pos = torch.arange(q, dtype=torch.float32)
    if kind == "cross":
        q_pos = q_pos * ((k - 1) / (q - 1)) if q > 1 else torch.zeros(q)
    distance = (torch.arange(k, dtype=torch.float32)[None, :] - q_pos[:, None]).abs()  # (Q, K)
    entropy = -torch.xlogy(w, w).sum(-1).mean(-1)  # (L, H+1)
    max_weight = w.amax(-1).mean(-1)
    diag = (w * distance).sum(-1).mean(-1)
    n_layers, n_panels = entropy.shape
    heads = [*range(n_panels - 1), MEAN_HEAD]
    return pd.DataFrame({
        "layer": np.repeat(np.arange(n_layers), n_panels), "head": heads * n_layers,
        "entropy": entropy.flatten().numpy(), "max_weight": max_weight.flatten().numpy(),
        "diag_distance": diag.flatten().numpy(),
    })


def timeline_frame(snapshots: Sequence[tuple[int, AttentionTrace]], kind: str = "cross", layer: int = 0,
                   head: int | None = None) -> pd.DataFrame:
    """One map per training snapshot, stacked: step, query/key index and (raw) token, weight, masked."""
    columns = ["step", "query_index", "query_token", "key_index", "key_token", "weight", "masked"]
    frames = []
    for step, trace in snapshots:
        frame = _matrix_frame(trace, kind, layer, head, visible=False)
        frame.insert(0, "step", int(step))
        frames.append(frame[columns])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _plotly_text(text: str) -> str:
    """Escape Plotly's pseudo-HTML, so tokens like "<s>" show literally instead of striking text through."""
    return visible_token(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def topk_bars(top_k: Sequence[tuple[str, float]], chosen: str | None = None) -> go.Figure:
    """Horizontal bars of the top-k next-token probabilities (in %), the chosen token highlighted."""
    tokens = [_plotly_text(t) for t, _ in top_k]
    percent = [100.0 * float(p) for _, p in top_k]
    colors = [CHOSEN_COLOR if t == chosen else BAR_COLOR for t, _ in top_k]
    positions = list(range(len(tokens)))
    fig = go.Figure(go.Bar(
        x=percent, y=positions, orientation="h", marker=dict(color=colors), customdata=tokens,
        text=[f"{p:.1f}%" for p in percent], textposition="outside", cliponaxis=False,
        hovertemplate="%{customdata}: %{x:.2f}%<extra></extra>"))
    fig.update_yaxes(tickvals=positions, ticktext=[f"<b>{t}</b>" if c == CHOSEN_COLOR else t
                                                   for t, c in zip(tokens, colors)],
                     autorange="reversed", tickfont=dict(size=14), showgrid=False)
    fig.update_xaxes(range=[0, 118], ticksuffix="%", showgrid=True, gridcolor="#eee", zeroline=False)
    fig.update_layout(template="plotly_white", height=60 + 30 * max(len(tokens), 1), bargap=0.25,
                      margin=dict(l=10, r=10, t=10, b=30), showlegend=False)
    return fig


def _downsample(frame: pd.DataFrame, max_points: int) -> pd.DataFrame:
    """At most max_points evenly spaced rows, always keeping the first and the last."""
    if len(frame) <= max_points:
        return frame
    index = np.unique(np.linspace(0, len(frame) - 1, max_points).round().astype(int))
    return frame.iloc[index]


def training_curves(history: Sequence[dict], evals: Sequence[dict] = (), *, uirevision: str = "train",
                    smoothing: float = 0.8, max_points: int = 2000) -> go.Figure:
    """Loss (top) and accuracy (bottom) against step, validation points overlaid; a user's zoom survives reruns.

    With `smoothing` > 0 the logged values are drawn faintly ("train loss (per step)") under an exponential
    moving average ("train loss"). Lines are thinned to at most `max_points` points; the last step is kept.
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    hist = pd.DataFrame(list(history))
    for metric, row in (("loss", 1), ("accuracy", 2)):
        if hist.empty or metric not in hist:
            continue
        color, name = LINE_COLORS[metric], f"train {metric}"
        if smoothing > 0:
            shown = _downsample(hist.assign(smooth=hist[metric].ewm(alpha=1 - smoothing).mean()), max_points)
            fig.add_trace(go.Scatter(x=shown["step"], y=shown[metric], mode="lines", name=f"{name} (per step)",
                                     line=dict(color=color, width=1), opacity=0.3, showlegend=False,
                                     hoverinfo="skip"), row=row, col=1)
            fig.add_trace(go.Scatter(x=shown["step"], y=shown["smooth"], mode="lines", name=name,
                                     line=dict(color=color, width=2)), row=row, col=1)
        else:
            shown = _downsample(hist, max_points)
            fig.add_trace(go.Scatter(x=shown["step"], y=shown[metric], mode="lines", name=name,
                                     line=dict(color=color, width=1.5)), row=row, col=1)
    ev = pd.DataFrame([e for e in evals if "step" in e])
    for metric, row, name, symbol in (("loss", 1, "valid loss", "circle"),
                                      ("token_accuracy", 2, "valid token accuracy", "circle"),
                                      ("exact_match", 2, "valid exact match", "diamond")):
        if metric in ev:
            color = LINE_COLORS[metric if metric == "exact_match" else f"valid_{metric.split('_')[-1]}"]
            fig.add_trace(go.Scatter(x=ev["step"], y=ev[metric], mode="lines+markers", name=name,
                                     line=dict(color=color, width=1, dash="dot"),
                                     marker=dict(color=color, size=8, symbol=symbol)), row=row, col=1)
    fig.update_yaxes(title_text="loss", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="accuracy", range=[0, 1.02], tickformat=".0%", row=2, col=1)
    fig.update_xaxes(title_text="step", row=2, col=1)
    if not fig.data:
        fig.add_annotation(text="No training steps yet", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                           font=dict(size=14, color="#888"))
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
    fig.update_layout(template="plotly_white", height=480, uirevision=uirevision, hovermode="x unified",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig


def chart_to_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """PNG bytes of an Altair chart (rendered by vl-convert, no browser needed)."""
    vlc = _vl_convert()
    try:
        return vlc.vegalite_to_png(chart.to_dict(), scale=scale, vl_version=_vl_version())
    except Exception as exc:  # vl-convert raises plain ValueError/RuntimeError with the renderer's message
        raise ChartExportError(f"could not render the chart as PNG: {exc}") from exc


def chart_to_svg(chart: alt.TopLevelMixin) -> str:
    """SVG text of an Altair chart (rendered by vl-convert)."""
    vlc = _vl_convert()
    try:
        return vlc.vegalite_to_svg(chart.to_dict(), vl_version=_vl_version())
    except Exception as exc:
        raise ChartExportError(f"could not render the chart as SVG: {exc}") from exc


def _vl_convert():
    try:
        import vl_convert
    except ImportError as exc:
        raise ChartExportError("exporting charts needs the vl-convert-python package") from exc
    return vl_convert


def _vl_version() -> str:
    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
