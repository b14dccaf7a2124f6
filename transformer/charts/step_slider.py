"""The Decode page's step-through as one self-contained Vega-Lite chart with a step slider (for notebooks and HTML).

Each part is the app's own chart (`source_strip`, `decoder_row_chart`, `topk_bars`, `attention_heatmap`) drawn
for every step; their data are stacked with a `step` column and the slider's parameter filters them, so moving
the slider needs no Python (no server, no widgets library).
"""
from __future__ import annotations

from typing import Callable, Sequence

import altair as alt
import pandas as pd

from ..decode import DecodeResult, head_label
from .attention import attention_heatmap
from .step import decoder_row_chart, source_strip, topk_bars
from .style import visible_token

STEP_PARAM = "step"  # the slider's parameter: the 1-based step shown


def _stepped(charts: Sequence[alt.LayerChart], param: alt.Parameter) -> alt.LayerChart:
    """The first chart, each of its layers drawing the data of every step's chart, filtered to the slider's step.

    The charts must differ in their data only (the builders keep their specs independent of the data: fixed axes,
    sizes set for the whole output).
    """
    first = charts[0]

    def stacked(data_of: Callable[[alt.TopLevelMixin], pd.DataFrame]) -> pd.DataFrame:
        return pd.concat([data_of(chart).assign(step=t + 1) for t, chart in enumerate(charts)], ignore_index=True)

    only = f"datum.step == {param.name}"
    shared = isinstance(first.data, pd.DataFrame)  # `alt.layer` lifts data that all its layers share
    def layer_data(i: int) -> Callable[[alt.TopLevelMixin], pd.DataFrame]:
        return lambda chart: chart.layer[i].data

    layers = [(layer if shared else layer.properties(data=stacked(layer_data(i)))).transform_filter(only)
              for i, layer in enumerate(first.layer)]
    stepped = first.copy(deep=False)
    stepped.layer = layers
    stepped.autosize = alt.Undefined  # a part of a concatenated chart may not carry it; the whole chart does
    if shared:
        stepped.data = stacked(lambda chart: chart.data)
    return stepped


def _step_heading(result: DecodeResult, param: alt.Parameter) -> alt.Chart:
    """One line per step: "Step t of n: input ‹x› → output ‹y› (p%)"."""
    tokens = result.trace.decoder_input_tokens
    n = len(result.steps)
    lines = [f"Step {t + 1} of {n}: input ‹{visible_token(tokens[t])}› → output ‹{visible_token(step.token)}› "
             f"({step.prob:.1%})" for t, step in enumerate(result.steps)]
    frame = pd.DataFrame({"step": range(1, n + 1), "line": lines})
    return (alt.Chart(frame).mark_text(align="left", baseline="middle", fontSize=16, fontWeight="bold", x=0, y=12)
            .encode(text="line:N").transform_filter(f"datum.step == {param.name}")
            .properties(width=600, height=24, view=alt.ViewBackground(stroke=None)))


def _titled(chart: alt.TopLevelMixin, title: str) -> alt.TopLevelMixin:
    return chart.properties(title=alt.TitleParams(title, anchor="start", fontSize=13))


def step_slider_chart(result: DecodeResult, layer: int, head: int | None = None, *, first_step: int = 1,
                      max_width: int = 900) -> alt.VConcatChart:
    """The step-through of a decode with a slider over its steps: the step's heading, the decoder self-attention over
    the prefix, the top-k candidates, the source shaded by cross-attention and the cross-attention rows so far.

    `layer` is a decoder layer (0-based), `head` a head or None for the mean of heads; `first_step` (1-based) is
    where the slider starts.
    """
    trace, steps = result.trace, result.steps
    n = len(steps)
    if n == 0:
        raise ValueError("the decode has no steps to show")
    if not 1 <= first_step <= n:
        raise ValueError(f"first_step must be between 1 and {n}, got {first_step}")
    cross, self_attn = trace.matrix("cross", layer, head), trace.matrix("decoder_self", layer, head)  # (T, S), (T, T)
    tokens = trace.decoder_input_tokens
    slider = alt.param(name=STEP_PARAM, value=first_step,
                       bind=alt.binding_range(min=1, max=n, step=1, name="Step "))

    def each(build: Callable[[int], alt.LayerChart]) -> alt.LayerChart:
        return _stepped([build(t) for t in range(n)], slider)

    which = f"layer {layer + 1} · {head_label(head).lower()}"
    prefix = each(lambda t: decoder_row_chart(tokens[: t + 1], self_attn[t, : t + 1].tolist(),
                                              max_width=min(470, max_width), all_tokens=tokens))
    k = max(len(step.top_k) for step in steps)
    top = each(lambda t: topk_bars(steps[t].top_k, chosen=steps[t].token, width=240)).properties(height=30 * k)
    for part in top.layer:  # the candidates' axis as wide at every step: the chart keeps its size while sliding
        axis = part.encoding.y["axis"]  # (`.axis` is Altair's setter method, not the value)
        axis["minExtent"] = axis["maxExtent"] = 170
    strip = each(lambda t: source_strip(trace.source_tokens, cross[t].tolist(), max_width=max_width))
    heat = each(lambda t: attention_heatmap(trace, "cross", layer, head, max_row=t, highlight_row=t, size=330,
                                            title=""))
    return alt.vconcat(
        _step_heading(result, slider),
        alt.hconcat(_titled(prefix, "Decoder self-attention over the prefix"),
                    _titled(top, f"Top-{k} candidates"), spacing=40),
        _titled(strip, f"Source tokens shaded by the step's cross-attention · {which}"),
        _titled(heat, f"Cross-attention rows up to the step · {which}"),
        spacing=24, autosize=alt.AutoSizeParams(type="pad", contains="padding"),
    ).add_params(slider)
