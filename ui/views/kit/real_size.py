"""Views for real sizes and long inputs: the head overview map, the window of keys a long map shows, and the
choice of how heads combine (as picked, max over heads, rollout across layers)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence, cast

import altair as alt
import streamlit as st
import torch

from transformer.analysis import (
    CORPUS_STATISTICS,
    STATISTICS,
    CorpusStats,
    available_statistics,
    group_mean,
    grouped,
    head_overview_frame,
)
from transformer.charts import aggregate_heatmap, attention_heatmap, head_overview, keys_per_window, selected_panel
from transformer.data import GoldSource
from transformer.decode import ALL_TITLES, MEAN_HEAD, AttentionTrace
from transformer.model import Head

from .head_link import head_page_link
from .map_fit import fits_column
from .selection import LINK_PARAMS
from .widgets import MAP_LABELS_PX, PAGE_PX, SlideTitle, show_chart, slide_downloads

MAP_WIDTH = PAGE_PX - MAP_LABELS_PX  # pixels a map's plotting area may take when it has the page's width
OVERVIEW_FIRST = 16  # more heads of one kind than this (layers x heads): the overview is the first view
COMBINE = {"pick": "As picked (a head or the mean)", "max": "Max over heads", "rollout": "Rollout across layers",
           "group": "Mean within the key/value group"}  # "group": offered only for a grouped-query kind


def combine_options(trace: AttentionTrace, kind: str) -> list[str]:
    """The ways heads combine for this kind: the group mean only where query heads share key/value groups."""
    return [c for c in COMBINE if c != "group" or grouped(trace, kind)]


def group_mean_trace(trace: AttentionTrace, kind: str) -> AttentionTrace:
    """The trace with each query head of `kind` replaced by the mean map of its key/value group."""
    groups = torch.tensor(trace.head_groups[kind])
    return replace(trace, maps={**trace.maps, kind: group_mean(trace, kind)[:, groups]})  # (L, H, Q, K)


def _open_overview_head() -> None:
    """Callback of the overview map: the clicked head becomes the large map."""
    panel = selected_panel(st.session_state.get("attention_overview"))
    if panel is not None:
        layer, head = panel
        keys = LINK_PARAMS["attention"]
        st.session_state[keys["layer"]] = layer
        st.session_state[keys["head"]] = MEAN_HEAD if head is None else head


OVERVIEW_COLOUR_KEY = LINK_PARAMS["attention"]["colour"]  # "Colour each head by" (the link's colour=)
CORPUS_PREFIX = "corpus:"  # an overview option naming a corpus statistic ("corpus:entropy")
CORPUS_SHARES = frozenset(CORPUS_STATISTICS) - {"entropy", "distance"}  # statistics that lie in [0, 1]


def _overview_title(option: str) -> str:
    if option.startswith(CORPUS_PREFIX):
        return f"{option.removeprefix(CORPUS_PREFIX)} over the corpus"
    return STATISTICS.get(option, option)


def show_head_overview(trace: AttentionTrace, kind: str, gold: Sequence[GoldSource] | None,
                       title: SlideTitle | None = None, corpus: CorpusStats | None = None) -> None:
    """Layers x heads of one kind, one cell per head coloured by a statistic the user picks (of this input, or of
    the corpus statistics computed for this model, `corpus`); a click opens it. `title` names model and input on
    its slide download."""
    frame = head_overview_frame(trace, [kind], gold=gold or None)
    stats = available_statistics(frame, kind)
    if corpus is not None:
        rows = corpus.frame[corpus.frame["kind"] == kind]
        if len(rows) == len(frame):  # the corpus statistics of this model's heads
            values = rows.set_index(["layer", "head"])
            for name in CORPUS_STATISTICS:
                if values[name].notna().any():
                    frame[CORPUS_PREFIX + name] = [float(values.loc[(la, h), name]) for la, h in
                                                   zip(frame["layer"], frame["head"], strict=True)]
                    stats.append(CORPUS_PREFIX + name)
    if st.session_state.get(OVERVIEW_COLOUR_KEY) not in stats:
        st.session_state[OVERVIEW_COLOUR_KEY] = stats[0]
    st.selectbox("Colour each head by", stats, format_func=_overview_title, key=OVERVIEW_COLOUR_KEY,
                 help="This input's statistics, and once computed (Head statistics over a corpus, below) the "
                      "corpus's.")
    statistic = st.session_state[OVERVIEW_COLOUR_KEY]
    chart = head_overview(frame, statistic, kind, title=_overview_title(statistic),
                          share=statistic.removeprefix(CORPUS_PREFIX) in CORPUS_SHARES)
    show_chart(chart, key="attention_overview", on_select=_open_overview_head, selection_mode="cell", width="content")
    if title is not None:
        slide_downloads(chart, title.lines(f"{ALL_TITLES[kind]} · every head by {_overview_title(statistic)}"),
                        f"{kind}_head_overview", "attention_overview")
    corpus_note = f" Corpus statistics: {corpus.sentences:,} sentences." if statistic.startswith(CORPUS_PREFIX) \
        and corpus is not None else ""
    n_layers, n_heads = trace.n_layers(kind), trace.n_heads
    st.caption(f"{n_layers} layer{'s' * (n_layers != 1)} × {n_heads} head{'s' * (n_heads != 1)}; a click on a cell "
               f"opens that head large below.{corpus_note}")
    keys = LINK_PARAMS["attention"]
    layer, head = st.session_state.get(keys["layer"]), st.session_state.get(keys["head"])
    if isinstance(layer, int) and isinstance(head, int) and 0 <= head < trace.n_heads:
        picked = Head(kind, layer, head)
        head_page_link(picked, label=f"Open {picked.label}'s page (the head picked)")


def overview_first(trace: AttentionTrace, kind: str) -> bool:
    """Whether the overview leads the page (a kind with many heads) rather than waiting in an expander."""
    return trace.n_layers(kind) * trace.n_heads > OVERVIEW_FIRST


def needs_page_width(trace: AttentionTrace, kind: str, presenting: bool = False) -> bool:
    """Whether a map of this kind needs the page's whole width: its keys, beside its token labels and legend, do not
    fit beside the side column (`presenting`: presenter mode's wider one)."""
    return not fits_column(trace, kind, presenting)


def map_columns(trace: AttentionTrace, kind: str, spec: list[int], presenting: bool = False) -> tuple[Any, Any]:
    """(map, side) containers: side by side in columns of `spec`, or, for a map that needs the page's width (a long
    input), the map above and the side below it (`presenting`: measured against presenter mode's column)."""
    if needs_page_width(trace, kind, presenting):
        return st.container(), st.container()
    map_col, side_col = st.columns(spec, gap="large")
    return map_col, side_col


def key_window(trace: AttentionTrace, kind: str, page: str) -> tuple[int, int] | None:
    """A "Keys" range slider (widget key prefixed by `page`) when the map's keys cannot all fit the page at a
    pointable cell size; the window (start, stop), 0-based, stop exclusive, or None when every key fits."""
    n_keys = trace.axis_sizes(kind)[1]
    fit = keys_per_window(MAP_WIDTH)
    if n_keys <= fit:
        return None
    key = f"{page}_keys_{kind}_{n_keys}"
    st.session_state.setdefault(key, (1, fit))
    # a range slider: its value in session state is a pair, which the stubs' overloads cannot see from `key`
    first, last = cast(tuple[int, int], st.slider(
        f"Keys shown (of {n_keys})", 1, n_keys, key=key,
        help=f"A long input's map shows up to {fit} keys at a time; move the window, or drag its ends. Every key's "
             "weight is in the trace download."))
    return first - 1, min(last, first - 1 + fit)


def combined_title(kind: str, layer: int, head: int | None, combine: str) -> str:
    """What the large map shows, for its slide: 'Cross-attention · layer 2 · head 3' or '… · max over heads'."""
    if combine == "group" and head is not None:
        what = f"mean of head {head + 1}'s key/value group"
    else:
        what = ("mean of heads" if head is None else f"head {head + 1}") if combine in ("pick", "group") \
            else COMBINE[combine].lower()
    return f"{ALL_TITLES[kind]} · layer {layer + 1} · {what}"


def large_map(trace: AttentionTrace, kind: str, layer: int, head: int | None, combine: str,
              **options: Any) -> alt.LayerChart:
    """The large map: one head (or the mean), or the heads combined (max, rollout), within the key window (its
    plotting area at most `max_width`, by default the page's)."""
    options.setdefault("max_width", MAP_WIDTH)
    if combine == "pick":
        return attention_heatmap(trace, kind, layer, head, **options)
    if combine == "group":
        options.pop("gold", None)
        return attention_heatmap(group_mean_trace(trace, kind), kind, layer, head, **options)
    options.pop("gold", None)  # a combined map is no head's: the gold outline belongs to heads
    return aggregate_heatmap(trace, kind, combine, layer, **options)
