"""One head over a corpus (its page): its strongest rows by decile of the peak weight, each drawn as a strip over
the sentence's keys; its attention distances; the tokens it attends from and to most; its statistics against the
other heads of its layer. From the kept statistics (`CorpusStats.kept`); `head_page_html` writes it all as one
standalone HTML page."""
from __future__ import annotations

import html

import altair as alt
import pandas as pd

from ..analysis import DISTANCE_EDGES, CorpusStats, HeadEstimate, distance_bin_labels
from ..model import Head
from .inline_html import inline_chart_html
from .style import AUTOSIZE, BLUES, visible_token

LAYER_STATISTICS = ("entropy", "max_weight", "first", "special", "previous", "next", "distance", "alignment")
MAX_KEYS = 60  # keys an example strip shows, around its peak


def _example_frame(n: int, example: dict) -> pd.DataFrame:
    """One kept row's keys (at most MAX_KEYS around the peak) as rows of the examples' chart."""
    keys, row, peak = example["keys"], example["row"], example["key"]
    lo = max(0, min(peak - MAX_KEYS // 2, len(keys) - MAX_KEYS))
    shown = range(lo, min(len(keys), lo + MAX_KEYS))
    query = visible_token(example["queries"][example["query"]])
    title = (f"{n + 1}. sentence {example['sentence'] + 1}, query {query!r} (position {example['query']}): "
             f"peak {example['peak']:.2f} on {visible_token(keys[peak])!r} (decile {example['decile'] + 1})")
    return pd.DataFrame({"example": title, "position": list(shown),
                         "token": [f"{visible_token(keys[k])}·{k}" for k in shown],
                         "weight": [row[k] for k in shown], "peak": [k == peak for k in shown]})


def examples_chart(examples: list[dict], *, step: int = 18) -> alt.FacetChart:
    """The kept rows, one strip each over its keys (at most MAX_KEYS around the peak), the peak key outlined."""
    data = pd.concat([_example_frame(n, e) for n, e in enumerate(examples)], ignore_index=True)
    order = list(dict.fromkeys(data["example"]))
    return (alt.Chart(data, width=alt.Step(step), height=22)
            .mark_rect(stroke="black")
            .encode(x=alt.X("token:N", sort=None, title=None,
                            axis=alt.Axis(labelAngle=-90, labelLimit=90, labelOverlap=False)),
                    color=alt.Color("weight:Q", scale=alt.Scale(range=list(BLUES), domain=[0, 1]), legend=None),
                    strokeWidth=alt.condition("datum.peak", alt.value(2), alt.value(0)),
                    tooltip=["token:N", alt.Tooltip("weight:Q", format=".3f")])
            .facet(row=alt.Row("example:N", sort=order, title=None,
                               header=alt.Header(labelAngle=0, labelAlign="left", labelOrient="top",
                                                 labelAnchor="start", labelFontSize=12, labelLimit=step * MAX_KEYS)))
            .resolve_scale(x="independent").properties(autosize=AUTOSIZE))


def distance_chart(histogram: list[float], *, width: int = 420) -> alt.Chart:
    """The share of the head's weight at each distance |k − q| (bins: DISTANCE_EDGES; empty bins at the end cut)."""
    total = sum(histogram) or 1.0
    last = max((i for i, v in enumerate(histogram) if v > 0), default=0)
    labels = distance_bin_labels()[:last + 1]
    data = pd.DataFrame({"distance": labels, "share": [v / total for v in histogram[:last + 1]],
                         "low": list(DISTANCE_EDGES[:last + 1])})
    return (alt.Chart(data, title="Attention distance |key − query| (share of weight)", width=width, height=180,
                      autosize=AUTOSIZE)
            .mark_bar().encode(x=alt.X("distance:N", sort=None, title="distance"),
                               y=alt.Y("share:Q", title="share of weight"),
                               tooltip=["distance:N", alt.Tooltip("share:Q", format=".3f")]))


def token_chart(pairs: list[tuple[str, float]], title: str, *, width: int = 260) -> alt.Chart:
    """Horizontal bars of (token, total weight), largest first."""
    data = pd.DataFrame({"token": [visible_token(t) for t, _ in pairs], "weight": [v for _, v in pairs]})
    return (alt.Chart(data, title=title, width=width, height=alt.Step(24), autosize=AUTOSIZE)
            .mark_bar().encode(y=alt.Y("token:N", sort=None, title=None, axis=alt.Axis(labelOverlap=False)),
                               x=alt.X("weight:Q", title="total weight"),
                               tooltip=["token:N", alt.Tooltip("weight:Q", format=".3f")]))


def layer_frame(stats: CorpusStats, head: Head) -> pd.DataFrame:
    """The statistics of the head's layer's heads, long: label, statistic, value, this (the head itself)."""
    rows = stats.frame.query("kind == @head.kind and layer == @head.layer")
    long = rows.melt(id_vars=["kind", "layer", "head"], value_vars=list(LAYER_STATISTICS), var_name="statistic")
    long["label"] = [Head(k, la, h).label for k, la, h in zip(long["kind"], long["layer"], long["head"], strict=True)]
    long["this"] = long["head"] == head.head
    return long.dropna(subset=["value"]).reset_index(drop=True)


def layer_chart(stats: CorpusStats, head: Head, *, width: int = 420) -> alt.Chart:
    """Each statistic of the head (large, orange) against the other heads of its layer (grey), one row each."""
    data = layer_frame(stats, head)
    return (alt.Chart(data, width=width, height=24)
            .mark_point(filled=True)
            .encode(x=alt.X("value:Q", title=None, scale=alt.Scale(zero=False)),
                    color=alt.condition("datum.this", alt.value("#e6550d"), alt.value("#999999")),
                    size=alt.condition("datum.this", alt.value(140), alt.value(40)),
                    tooltip=["label:N", "statistic:N", alt.Tooltip("value:Q", format=".3f")])
            .facet(row=alt.Row("statistic:N", sort=list(LAYER_STATISTICS), title=None,
                               header=alt.Header(labelAngle=0, labelAlign="left")),
                   title=f"{head.label} against layer {head.layer + 1}'s other heads")
            .resolve_scale(x="independent").properties(autosize=AUTOSIZE))


def head_page_charts(stats: CorpusStats, head: Head, *, examples: int = 6) -> dict[str, alt.TopLevelMixin | None]:
    """The page's charts: `examples` (the top decile's top rows first, at most `examples`), `distance` (None for
    cross-attention), `to`, `from`, `layer`. KeyError for a head the statistics do not have."""
    if stats.kept is None:
        raise KeyError("these statistics kept no examples")
    kind, layer, h = head
    rows = stats.kept.examples(kind, layer, h)[:examples]
    hist = stats.kept.distance_histogram(kind, layer, h)
    return {"examples": examples_chart(rows) if rows else None,
            "distance": None if hist is None else distance_chart(hist),
            "to": token_chart(stats.kept.top_tokens(kind, layer, h, "to"), "Attended to most (as key)"),
            "from": token_chart(stats.kept.top_tokens(kind, layer, h, "from"), "Attends most from (as query)"),
            "layer": layer_chart(stats, head)}


def head_page_html(stats: CorpusStats, head: Head, *, model: str = "", estimate: HeadEstimate | None = None) -> str:
    """The head's page as one standalone HTML document (the charts draw offline); `estimate`: the head's one-pass
    ablation estimate as the page shows it (its value and what it is over, or n/a and why)."""
    titles = {"examples": "Strongest rows by decile of the peak weight", "distance": "Attention distance",
              "to": "Tokens attended to", "from": "Tokens attending", "layer": "Against its layer"}
    parts = [f"<h1>{html.escape(head.label)}{' — ' + html.escape(model) if model else ''}</h1>",
             f"<p>{stats.sentences} sentences ({html.escape(stats.mode)}).</p>"]
    if estimate is not None:
        parts.append(f"<p class='estimate'>{html.escape(estimate.text())}.</p>")
    for name, chart in head_page_charts(stats, head).items():
        if chart is not None:
            parts.append(f"<h2>{titles[name]}</h2>{inline_chart_html(chart.to_dict())}")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(head.label)}</title></head>"
            f"<body style='font-family: sans-serif'>{body}</body></html>")
