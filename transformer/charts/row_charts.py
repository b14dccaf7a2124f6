"""Charts of rows over every key, at any length (a row is read through the attention source, so a short input's
and a document's draw alike): the decode steps' rows as one strip each, a row summed over groups of tokens (the
heaviest groups as bars), two models' rows at a step and their difference, a step's patching estimate per head, and a
query's row over every key scaled to the row's own max (a random or diffuse head's weights are ~1/N, too small to see
on a 0–1 scale), its top keys marked and named.
Each takes what the analysis computed (pooled with `pool_row`, summed with `group_sums`) and only draws it."""
from __future__ import annotations

from typing import Sequence

import altair as alt
import pandas as pd
import torch
from torch import Tensor

from ..analysis import HEADS, bin_starts, pool_row
from .style import AUTOSIZE, BLUES, HIGHLIGHT_COLOR, PLAIN_AXIS, visible_token

ROW_CHART_PX = 600  # the width of a row chart (the page's column, presenter mode included)


def step_rows_chart(weights: Tensor, names: Sequence[str], title: str, *, width: int = ROW_CHART_PX) -> alt.Chart:
    """Each decode step's row (steps, keys) as one strip, the max of each bin of keys (`pool_row`), `names` the
    steps' labels (top to bottom)."""
    pooled = pool_row(weights)  # (steps, bins)
    steps, bins = pooled.shape
    starts = bin_starts(weights.shape[-1], bins)
    frame = pd.DataFrame({"step": [names[t] for t in range(steps) for _ in range(bins)],
                          "key": [starts[b] for _ in range(steps) for b in range(bins)],
                          "weight": pooled.reshape(-1).double().numpy()})
    return alt.Chart(frame, width=width, height=100 + 22 * steps, title=title).mark_rect().encode(  # axes count in
        x=alt.X("key:O", title="key (bins)", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("step:O", title="step ‹output›", sort=list(names)),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues")), tooltip=["step", "key", "weight"])


def group_bars_chart(sums: Tensor, names: Sequence[str], title: str, *, top: int = 12,
                     width: int = ROW_CHART_PX) -> alt.Chart:
    """A row's weight summed over each group of tokens: the `top` heaviest groups as bars, each named by its
    number and text."""
    best = torch.topk(sums, min(top, len(names)))
    frame = pd.DataFrame({"group": [f"{int(g) + 1:,}. {names[int(g)] or '(blank)'}" for g in best.indices],
                          "weight": best.values.tolist()})
    return alt.Chart(frame, title=title, width=width).mark_bar().encode(
        x=alt.X("weight:Q", title="sum of the tokens' weights"),
        y=alt.Y("group:N", sort=None, title=None, axis=alt.Axis(labelLimit=260)))


def two_rows_chart(rows: dict[str, Tensor], title: str, *, width: int = ROW_CHART_PX) -> alt.Chart:
    """Two (or more) models' rows over their keys, the max of each bin, one line each (named by the dict's keys)."""
    frames = []
    for name, row in rows.items():
        bins = pool_row(row)
        frames.append(pd.DataFrame({"key": bin_starts(row.numel(), bins.numel()), "weight": bins.tolist(),
                                    "model": name}))
    return alt.Chart(pd.concat(frames), title=title, width=width, height=120).mark_line().encode(
        x="key:Q", y="weight:Q", color="model:N")


def row_difference_chart(diff: Tensor, title: str, *, width: int = ROW_CHART_PX) -> alt.Chart:
    """B − A over the same keys, the mean of each bin (a signed difference: the max would hide its sign)."""
    bins = pool_row(diff, how="mean")
    frame = pd.DataFrame({"key": bin_starts(diff.numel(), bins.numel()), "B − A": bins.tolist()})
    return alt.Chart(frame, title=title, width=width, height=80).mark_area(color="#7b4173").encode(
        x="key:Q", y="B − A:Q")


def step_patching_chart(frame: pd.DataFrame, title: str, *, width: int = ROW_CHART_PX) -> alt.Chart:
    """A step's patching estimate per head (`PatchingEstimate.frame`'s head sites) as a layers x heads map, diverging
    around 0."""
    heads = frame[frame["site"] == HEADS]
    cells = pd.DataFrame({"layer": [f"L{int(v) + 1}" for v in heads["layer"]],
                          "head": [f"H{int(v) + 1}" for v in heads["head"]], "estimate": heads["estimate"].tolist()})
    return alt.Chart(cells, title=title, width=min(width, 40 * heads["head"].nunique()),
                     height=min(360, 28 * heads["layer"].nunique())).mark_rect().encode(
        x=alt.X("head:N", sort=None), y=alt.Y("layer:N", sort=None),
        color=alt.Color("estimate:Q", scale=alt.Scale(scheme="redblue", domainMid=0, reverse=True)))


def row_strip_frames(row: Tensor, bins: Tensor, tokens: Sequence[str], top: int = 5
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the strip: each bin's first key, last key + 1, its max weight and that ÷ the row's max; the row's `top`
    keys: key, token, weight, relative, rank), from a row over every key and its max-pooled `bins`."""
    n, peak = row.numel(), float(row.max())
    size = n / bins.numel()
    starts = [int(i * size) for i in range(bins.numel())]
    strip = pd.DataFrame({"key": starts, "key_end": [*starts[1:], n], "weight": bins.double().numpy()})
    strip["relative"] = strip["weight"] / peak if peak > 0 else 0.0
    best = row.topk(min(top, n))
    keys = [int(k) for k in best.indices]
    named = pd.DataFrame({"key": keys, "token": [f"{visible_token(tokens[k]) if k < len(tokens) else '?'}"
                                                 for k in keys],
                          "weight": best.values.double().numpy(), "rank": list(range(1, len(keys) + 1))})
    named["relative"] = named["weight"] / peak if peak > 0 else 0.0
    return strip, named


def row_strip_chart(strip: pd.DataFrame, named: pd.DataFrame, n_keys: int, title: str, *, width: int = 600,
                    height: int = 110, measure: str = "weight", color: str = BLUES[-2]) -> alt.LayerChart:
    """A row over every key, each bin's max `measure` ÷ the row's max (its shape, whatever its scale; the axis
    title gives the max), the top keys marked and labelled with their tokens (from the data)."""
    peak = float(named["weight"].max()) if len(named) else 0.0
    x = alt.X("key:Q", title="key position", scale=alt.Scale(domain=[0, n_keys], nice=False, zero=False),
              axis=alt.Axis(format=",d", **PLAIN_AXIS))
    y = alt.Y("relative:Q", title=f"÷ row max ({peak:.3g})", scale=alt.Scale(domain=[0, 1.3], nice=False),
              axis=alt.Axis(values=[0, 0.5, 1], format=".1f", **PLAIN_AXIS))
    area = alt.Chart(strip).mark_rect(color=color).encode(
        x=x, x2="key_end:Q", y=y, y2=alt.datum(0),
        tooltip=[alt.Tooltip("key:Q", title="keys from"),
                 alt.Tooltip("weight:Q", format=".4g", title=f"max {measure}")])
    marks = alt.Chart(named).encode(x=x, y=y, tooltip=[
        alt.Tooltip("rank:Q"), alt.Tooltip("key:Q", title="key #"), alt.Tooltip("token:N"),
        alt.Tooltip("weight:Q", format=".4g", title=measure)])
    dots = marks.mark_point(filled=True, color=HIGHLIGHT_COLOR, size=36)
    labels = marks.transform_filter(alt.datum.rank <= 3).mark_text(dy=-9, fontSize=11, color="#333").encode(
        text="token:N")
    return alt.layer(area, dots, labels, title=title, width=width, height=height, autosize=AUTOSIZE)
