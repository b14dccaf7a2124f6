"""One head's computation as small charts, one per stage, each with its formula (`STAGES`): vectors as strips of
their largest dimensions, per-key numbers as bars over a window of keys, so long vectors and long inputs stay
readable. Pure functions: `HeadComputation` -> Altair."""
from __future__ import annotations

import math
from collections.abc import Sequence

import altair as alt
import pandas as pd
import torch
from torch import Tensor

from ..analysis import HeadComputation
from .style import AUTOSIZE, visible_token

TOP_DIMS = 16  # dimensions shown of a long vector (the largest by what they add to the stage)
KEY_WINDOW = 40  # keys shown at once; a longer input is shown as a window the caller moves
WIDTH = 560  # px: two charts side by side stay under 1280 px
ROW = 20  # px a key's row, room for its label at presenter mode's larger font
# every key labelled: Streamlit's theme turns labelOverlap on, which hid every other key's label even at 20 px rows
KEY_AXIS = alt.Axis(labelOverlap=False, labelFlush=False, labelLimit=140)  # (its labelFlush moved the first label)

# stage -> (title, formula in LaTeX); sources: Vaswani et al. 2017 eq. 1; Kobayashi et al. 2020 for contributions
STAGES: dict[str, tuple[str, str]] = {
    "query": ("Query vector", r"q_i = W_Q\,x_i + b_Q"),
    "keys": ("Key vectors", r"k_j = W_K\,x_j + b_K"),
    "products": ("Elementwise product", r"q_i \odot k_j"),
    "dots": ("Dot product", r"q_i \cdot k_j = \textstyle\sum_d q_{i,d}\,k_{j,d}"),
    "scores": ("Scaled score plus the model's terms",
               r"s_{ij} = \text{scale}\cdot q_i\cdot k_j + \textstyle\sum m_{ij}"),
    "weights": ("Softmax", r"\alpha_{ij} = \frac{e^{s_{ij}}}{\sum_{j'} e^{s_{ij'}}}"),
    "values": ("Value vectors", r"v_j = W_V\,x_j + b_V"),
    "weighted_values": ("Weight × value", r"\alpha_{ij}\,v_j"),
    "head_output": ("Head output", r"z_i = \textstyle\sum_j \alpha_{ij}\,v_j"),
    "share": ("Its share after the output projection", r"W_O^{h}\,z_i"),
    "contributions": ("What each key contributes", r"\lVert \alpha_{ij}\,W_O^{h} v_j \rVert"),
}


def key_window(n_keys: int, around: int | None = None, size: int = KEY_WINDOW) -> tuple[int, int]:
    """(start, stop) of a window of at most `size` keys, centred on key `around` where given."""
    if n_keys <= size:
        return 0, n_keys
    start = 0 if around is None else min(max(around - size // 2, 0), n_keys - size)
    return start, start + size


def top_dimensions(matrix: Tensor, k: int = TOP_DIMS) -> list[int]:
    """The `k` dimensions (columns of (rows, D), or entries of (D,)) with the largest absolute sum, in order."""
    weight = matrix.abs() if matrix.dim() == 1 else matrix.abs().sum(0)
    if weight.numel() <= k:
        return list(range(weight.numel()))
    return sorted(torch.topk(weight, k).indices.tolist())


def _tip(field: str) -> alt.Tooltip:
    """A nominal tooltip as a channel object: Altair turns a bare string into one through `from_dict`, which hashes
    every schema class (~15 ms a call; most of a new head's charts' time)."""
    return alt.Tooltip(f"{field}:N")


def _key_labels(tokens: Sequence[str], start: int, stop: int) -> list[str]:
    return [f"{j + 1}: {visible_token(tokens[j])}" for j in range(start, stop)]  # 1-based, as every picker


# the dimension labels (d4 = the vector's 4th number) say what they are, and the colours have their scale
DIMENSIONS_TITLE = "dimensions of the vector (d4: its 4th number), those that matter most here"
_LEGEND = alt.Legend(title="value (red > 0 > blue)", orient="bottom", direction="horizontal", gradientLength=140,
                     titleFontWeight="normal")


def _strip(vector: Tensor, dims: list[int], title: str, width: int = WIDTH) -> alt.Chart:
    frame = pd.DataFrame({"dimension": [f"d{d}" for d in dims], "value": vector[dims].tolist(), "order": dims})
    return alt.Chart(frame, title=title, width=width, height=28, autosize=AUTOSIZE).mark_rect().encode(
        x=alt.X("dimension:N", sort=alt.SortField("order"), title=DIMENSIONS_TITLE),
        color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domainMid=0, reverse=True), legend=_LEGEND),
        tooltip=[_tip("dimension"), alt.Tooltip("value:Q", format=".4f")])


def _matrix(matrix: Tensor, dims: list[int], keys: list[str], title: str, width: int = WIDTH) -> alt.Chart:
    values = matrix[:, dims].tolist()  # (keys, dims): one conversion, not a tensor index per cell
    rows = [{"key": key, "dimension": f"d{d}", "order": d, "value": value}
            for key, row in zip(keys, values, strict=True) for d, value in zip(dims, row, strict=True)]
    return alt.Chart(pd.DataFrame(rows), title=title, width=width, height=max(ROW * len(keys), 40),
                     autosize=AUTOSIZE).mark_rect().encode(
        x=alt.X("dimension:N", sort=alt.SortField("order"), title=DIMENSIONS_TITLE),
        y=alt.Y("key:N", sort=keys, title=None, axis=KEY_AXIS),
        color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domainMid=0, reverse=True), legend=_LEGEND),
        tooltip=[_tip("key"), _tip("dimension"), alt.Tooltip("value:Q", format=".4f")])


def _bars(values: Sequence[float], keys: list[str], title: str, width: int = WIDTH, fmt: str = ".4f") -> alt.Chart:
    """One bar per key; a value of -inf (a masked key) is drawn as no bar and labelled '−∞'."""
    shown = [v if math.isfinite(v) else None for v in values]
    labels = [f"{v:{fmt[1:]}}" if math.isfinite(v) else "−∞" for v in values]
    frame = pd.DataFrame({"key": keys, "value": shown, "label": labels})
    bars = alt.Chart(frame, width=width, height=max(ROW * len(keys), 40)).mark_bar().encode(
        y=alt.Y("key:N", sort=keys, title=None, axis=KEY_AXIS), x=alt.X("value:Q", title=None),
        tooltip=[_tip("key"), alt.Tooltip("label:N", title="value")])
    masked = alt.Chart(frame[frame["value"].isna()]).mark_text(align="left", dx=3).encode(
        y=alt.Y("key:N", sort=keys), x=alt.XDatum(0), text=alt.Text("label:N"))
    return alt.layer(bars, masked, title=title).properties(autosize=AUTOSIZE)


def stage_charts(c: HeadComputation, key_tokens: Sequence[str], window: tuple[int, int] | None = None,
                 top: int = TOP_DIMS) -> dict[str, alt.Chart | alt.LayerChart]:
    """One chart per stage in `STAGES` (and `terms`: one per additive term), keys limited to `window`."""
    start, stop = window if window is not None else key_window(c.n_keys, c.query)
    keys = _key_labels(key_tokens, start, stop)
    part = slice(start, stop)
    qk_dims = top_dimensions(c.products, top)
    v_dims = top_dimensions(c.weighted_values, top)
    charts: dict[str, alt.Chart | alt.LayerChart] = {
        "query": _strip(c.query_vector, qk_dims, STAGES["query"][0]),
        "keys": _matrix(c.keys[part], qk_dims, keys, STAGES["keys"][0]),
        "products": _matrix(c.products[part], qk_dims, keys, STAGES["products"][0]),
        "dots": _bars(c.dots[part].tolist(), keys, STAGES["dots"][0]),
    }
    for name, term in c.terms.items():
        charts[f"term:{name}"] = _bars(term[part].tolist(), keys, f"Added by the model: {name.replace('_', ' ')}")
    charts |= {
        "scores": _bars(c.scores[part].tolist(), keys, STAGES["scores"][0]),
        "weights": _bars(c.weights[part].tolist(), keys, STAGES["weights"][0]),
        "values": _matrix(c.values[part], v_dims, keys, STAGES["values"][0]),
        "weighted_values": _matrix(c.weighted_values[part], v_dims, keys, STAGES["weighted_values"][0]),
        "head_output": _strip(c.head_output, v_dims, STAGES["head_output"][0]),
        "share": _strip(c.share, top_dimensions(c.share, top), STAGES["share"][0]),
        "contributions": _bars(c.contributions[part].tolist(), keys, STAGES["contributions"][0]),
    }
    if c.query_unrotated is not None and c.keys_unrotated is not None:
        charts["query_unrotated"] = _strip(c.query_unrotated, qk_dims, "Query before rotation (RoPE)")
        charts["keys_unrotated"] = _matrix(c.keys_unrotated[part], qk_dims, keys, "Keys before rotation (RoPE)")
    return charts


CONTRIBUTION_TITLE = "what the key adds"  # the colour of a contribution map; its formula is in the page's help


def contribution_heatmap(matrix: Tensor, query_tokens: Sequence[str], key_tokens: Sequence[str], title: str,
                         window: tuple[int, int] | None = None, width: int = 460) -> alt.Chart:
    """A (queries, keys) map of contributions ||alpha_ij W_O^h v_j|| (colour from 0 to its largest value)."""
    start, stop = window if window is not None else (0, matrix.shape[1])
    keys = _key_labels(key_tokens, start, stop)
    queries = [f"{i}: {visible_token(t)}" for i, t in enumerate(query_tokens, 1)]
    values = matrix[:, start:stop].tolist()  # one conversion, not a tensor index per cell
    rows = [{"query": q, "key": key, "contribution": value}
            for q, row in zip(queries, values, strict=True) for key, value in zip(keys, row, strict=True)]
    cell = max(min(width / max(stop - start, 1), 28.0), 6.0)
    return alt.Chart(pd.DataFrame(rows), title=title, width=cell * (stop - start), height=cell * len(queries),
                     autosize=AUTOSIZE).mark_rect().encode(
        x=alt.X("key:N", sort=keys, title="keys", axis=alt.Axis(labelAngle=-60)),
        y=alt.Y("query:N", sort=queries, title="queries"),
        color=alt.Color("contribution:Q", scale=alt.Scale(scheme="greens", domainMin=0),
                        legend=alt.Legend(title=CONTRIBUTION_TITLE)),
        tooltip=[_tip("query"), _tip("key"), alt.Tooltip("contribution:Q", format=".4f")])


def mask_picture(mask: Tensor | None, query_tokens: Sequence[str], key_tokens: Sequence[str], title: str,
                 window: tuple[int, int] | None = None) -> alt.Chart:
    """The mask as the model added it: a cell per (query, key), "hidden" where the model added -inf (or its dtype's
    minimum), "visible" where 0; with no mask every cell is visible and the title says the model added none."""
    start, stop = window if window is not None else (0, len(key_tokens))
    keys = _key_labels(key_tokens, start, stop)
    queries = [f"{i}: {visible_token(t)}" for i, t in enumerate(query_tokens, 1)]
    rows = [{"query": q, "key": keys[j - start],
             "added": "visible (+0)" if mask is None or float(mask[i, j]) > -1e4 else "hidden (−∞)"}
            for i, q in enumerate(queries) for j in range(start, stop)]
    cell = max(min(420 / max(stop - start, 1), 24.0), 6.0)
    return alt.Chart(pd.DataFrame(rows), title=title if mask is not None else f"{title} · the model adds no mask here",
                     width=cell * (stop - start), height=cell * len(queries),
                     autosize=AUTOSIZE).mark_rect(stroke="white").encode(
        x=alt.X("key:N", sort=keys, title="keys", axis=alt.Axis(labelAngle=-60)),
        y=alt.Y("query:N", sort=queries, title="queries"),
        color=alt.Color("added:N", scale=alt.Scale(domain=["visible (+0)", "hidden (−∞)"],
                                                   range=["#c6dbef", "#525252"]), legend=alt.Legend(title=None)),
        tooltip=[_tip("query"), _tip("key"), _tip("added")])


def heads_row_chart(weights: Sequence[Tensor], key_tokens: Sequence[str], title: str) -> alt.Chart:
    """Each head's weights from one query, a row per head (H1 at the top), a column per key."""
    keys = [f"{j}: {visible_token(t)}" for j, t in enumerate(key_tokens, 1)]
    rows = [{"head": f"H{h + 1}", "key": keys[j], "weight": float(w)}
            for h, row in enumerate(weights) for j, w in enumerate(row)]
    heads = [f"H{h + 1}" for h in range(len(weights))]
    return alt.Chart(pd.DataFrame(rows), title=title, width=min(24 * len(keys), 900), height=24 * len(heads),
                     autosize=AUTOSIZE).mark_rect().encode(
        # every key and head named: Vega's overlap check boxes a slanted label upright, so it hid 9 of 12 keys (and,
        # with presenter mode's larger type, two of four heads) whose labels do not touch
        x=alt.X("key:N", sort=keys, title=None, axis=alt.Axis(labelAngle=-60, labelOverlap=False, labelLimit=120)),
        y=alt.Y("head:N", sort=heads, title=None, axis=alt.Axis(labelOverlap=False)),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1])),
        tooltip=[_tip("head"), _tip("key"), alt.Tooltip("weight:Q", format=".3f")])
