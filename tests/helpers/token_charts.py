"""Every chart kind that shows tokens, drawn on tokens that are Vega keywords, quotes, markup and bidirectional
text: what the label tests render (in vl-convert's Vega and in Chromium) and search the specs of."""
from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import torch

from tests.helpers.chart_traces import random_trace
from transformer.analysis import AttentionDifference, LensGrid
from transformer.charts import (
    aggregate_heatmap,
    attention_grid,
    attention_heatmap,
    attention_panels,
    contribution_heatmap,
    decoder_row_chart,
    difference_heatmap,
    heads_row_chart,
    lens_grid_chart,
    line_view,
    mask_picture,
    node_attention_chart,
    prediction_bars,
    source_strip,
    topk_bars,
    visible_token,
)
from transformer.decode import MaskPrediction

# Vega keywords and names, quotes, a backslash, a line separator, markup, an emoji, right-to-left text; one repeated
HOSTILE_TOKENS = ("if", "else", "this", "datum", "NaN", '"q"', "it's", "a\\b", "x\u2028y", "</script>", "😀", "שלום",
                  "if")
TARGET_TOKENS = ("<s>", "if", "datum", '"q"', "</script>", "שלום")
# tokens no expression of ours could contain by chance: checked absent from every expression string of a spec
DISTINCT_TOKENS = ('"q"', "it's", "a\\b", "x\u2028y", "xU+2028y", "</script>", "😀", "שלום")


@dataclass(frozen=True)
class TokenChart:
    """A chart and the labels it must draw: `axis` says they are one axis's labels in this order, else only that
    each is drawn somewhere (an axis label or a text mark)."""

    name: str
    chart: alt.TopLevelMixin
    labels: tuple[str, ...]
    axis: bool = False


def _shown(tokens) -> tuple[str, ...]:
    return tuple(visible_token(t) for t in tokens)


def _numbered(tokens) -> tuple[str, ...]:
    return tuple(f"{i}: {visible_token(t)}" for i, t in enumerate(tokens, 1))


def token_charts() -> list[TokenChart]:
    """One chart of each kind that shows tokens, on HOSTILE_TOKENS (the source) and TARGET_TOKENS (the decoder)."""
    src, tgt = list(HOSTILE_TOKENS), list(TARGET_TOKENS)
    trace = random_trace(src, tgt, layers=2, heads=2)
    other = random_trace(src, tgt, layers=2, heads=2, seed=1)
    diff = AttentionDifference(kind="cross", query_tokens=tuple(tgt), key_tokens=tuple(src), rows_left_out=0,
                               a=other.matrix("cross", 0, 0).numpy(), b=trace.matrix("cross", 0, 0).numpy())
    row = trace.matrix("cross", 0, 0)[2].tolist()
    weights = trace.weights("cross")[:, :, 2]  # (layers, heads, keys)
    return [
        TokenChart("heatmap encoder self", attention_heatmap(trace, "encoder_self", 0, 0), _shown(src), axis=True),
        TokenChart("heatmap cross", attention_heatmap(trace, "cross", 1, None, max_row=2, highlight_row=2),
                   _shown(src), axis=True),
        TokenChart("heatmap decoder self", attention_heatmap(trace, "decoder_self", 0, 1), _shown(tgt), axis=True),
        TokenChart("grid", attention_grid(trace, "cross"), _shown(src), axis=True),
        TokenChart("panels", attention_panels(trace, "cross", draw="rects", renderer="svg"), ()),
        TokenChart("difference", difference_heatmap(diff), _shown(src), axis=True),
        TokenChart("aggregate", aggregate_heatmap(trace, "cross", "max"), _shown(src), axis=True),
        TokenChart("line view", line_view(trace, "encoder_self", 0, [0, 1], threshold=0.0), _shown(src)),
        TokenChart("source strip", source_strip(src, row), _shown(src)),
        TokenChart("decoder row", decoder_row_chart(tgt, trace.matrix("decoder_self", 0, 0)[5].tolist()),
                   _shown(tgt)),
        TokenChart("top-k", topk_bars([("if", 0.5), ("</script>", 0.3), ("שלום", 0.2)], chosen="if"),
                   ("if", "</script>", "שלום")),
        TokenChart("contribution", contribution_heatmap(torch.rand(len(tgt), len(src)), tgt, src, "contributions"),
                   _numbered(src)),
        TokenChart("mask", mask_picture(None, tgt, src, "mask"), _numbered(src)),
        TokenChart("heads row", heads_row_chart(list(weights[0]), src, "heads"), _numbered(src)),
        TokenChart("beam node", node_attention_chart(weights, src), _numbered(src)),
        TokenChart("lens grid", lens_grid_chart(LensGrid(tokens=tuple(src[:6]), ranks=((1,) * 6,) * 3,
                                                         probs=((0.5,) * 6,) * 3, top=(tuple(src[:6]),) * 3)),
                   tuple(f"{i + 1} {t}" for i, t in enumerate(_shown(src[:6])))),
        TokenChart("mask top-k",
                   prediction_bars(MaskPrediction(2, "if", tuple((t, i, 0.1) for i, t in enumerate(src)))),
                   tuple(dict.fromkeys(_shown(src)))),
    ]


def expressions(spec: object) -> list[str]:
    """Every Vega expression string in a Vega-Lite spec (labelExpr, expr, test, calculate, filter)."""
    found: list[str] = []
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key in ("labelExpr", "expr", "test", "calculate", "filter") and isinstance(value, str):
                found.append(value)
            else:
                found.extend(expressions(value))
    elif isinstance(spec, list):
        for value in spec:
            found.extend(expressions(value))
    return found
