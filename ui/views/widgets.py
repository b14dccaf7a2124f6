"""Small widgets the pages share: token chips, a small table, layer/head pickers, downloads and the no-model message."""
from __future__ import annotations

import html
import json
import math
import re
from typing import Any, Callable, NamedTuple, Sequence

import altair as alt
import pandas as pd
import streamlit as st

from transformer.charts import visible_token as visible
from transformer import decode
from transformer.decode import KIND_TITLES, MEAN_HEAD
from ui.models import LOAD_ERROR_KEY, ActiveModel, current_model

_CHIP = ("display:inline-block;margin:2px 3px;padding:2px 7px;border-radius:6px;font-family:ui-monospace,"
         "SFMono-Regular,Menlo,monospace;font-size:0.92rem;line-height:1.6;border:1px solid #d0d7e2;")


def require_model() -> ActiveModel:
    """The current model, or stop the page with a message saying why there is none."""
    active = current_model()
    if active is None:
        error = st.session_state.get(LOAD_ERROR_KEY)
        if error:
            st.error(error + " Pick another model in the sidebar.", icon=":material/error:")
        else:
            st.info("No model yet: upload a checkpoint bundle in the sidebar or train one on the Train page.",
                    icon=":material/info:")
            st.page_link("pages/train.py", label="Train a model", icon=":material/model_training:")
        st.stop()
    return active


def md(text: str) -> str:
    """User-derived text made literal inside Markdown (headings, captions): special characters escaped."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:])", r"\\\1", text)


def md_token(token: str) -> str:
    """A token, visible and Markdown-escaped."""
    return md(visible(token))


def token_chips(tokens: Sequence[str], weights: Sequence[float] | None = None, *, highlight: int | None = None,
                dim_from: int | None = None, caption: str = "") -> str:
    """HTML for tokens as chips: shaded by weight (0..1), one outlined, those from `dim_from` on faded."""
    chips = []
    for i, token in enumerate(tokens):
        style = _CHIP
        title = f"position {i}"
        if weights is not None:
            w = min(max(float(weights[i]), 0.0), 1.0)
            style += f"background:rgba(33,113,181,{w:.3f});color:{'#fff' if w > 0.55 else '#1f2937'};"
            title += f", weight {w:.3f}"
        else:
            style += "background:#f3f6fb;color:#1f2937;"
        if i == highlight:
            style += "border:2px solid #d62728;font-weight:600;"
        if dim_from is not None and i >= dim_from:
            style += "opacity:0.35;"
        chips.append(f'<span style="{style}" title="{html.escape(title)}">{html.escape(visible(token))}</span>')
    head = (f'<div style="font-size:0.8rem;color:#6b7280;margin-bottom:2px">{html.escape(caption)}</div>'
            if caption else "")
    return f'{head}<div style="line-height:2.1">{"".join(chips)}</div>'


class Column(NamedTuple):
    """How small_table shows a column: its heading, a format for its numbers ("" for text) and a tooltip."""

    label: str
    fmt: str = ""
    help: str = ""


def small_table(frame: pd.DataFrame, columns: dict[str, Column]) -> str:
    """HTML for the `columns` of `frame` as a plain table, numbers right-aligned; everything is escaped."""
    def heading(column: Column) -> str:
        classes = " ".join(name for name, on in (("studio-help", column.help), ("studio-number", column.fmt)) if on)
        attributes = (f' class="{classes}"' if classes else "") + (f' title="{html.escape(column.help)}"'
                                                                   if column.help else "")
        return f"<th{attributes}>{html.escape(column.label)}</th>"

    def cell(value: Any, column: Column) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "<td></td>"  # no value (a step one output does not have)
        return (f'<td class="studio-number">{column.fmt % value}</td>' if column.fmt
                else f"<td>{html.escape(str(value))}</td>")

    head = "".join(heading(column) for column in columns.values())
    rows = "".join("<tr>" + "".join(cell(value, column) for value, column in zip(row, columns.values())) + "</tr>"
                   for row in frame[list(columns)].itertuples(index=False))
    return f'<div class="studio-table"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'


def show_small_table(frame: pd.DataFrame, columns: dict[str, Column], key: str) -> None:
    """A few rows of numbers as a plain HTML table: it draws with the page's Markdown, where st.dataframe first loads
    ~1.2 MB of data-grid code (no sorting or search here; at most ~10 rows show, the rest scroll)."""
    with st.container(key=key):
        st.markdown(small_table(frame, columns), unsafe_allow_html=True)


def show_chips(tokens: Sequence[str], weights: Sequence[float] | None = None, **options) -> None:
    """Render token chips (tokens are HTML-escaped)."""
    st.markdown(token_chips(tokens, weights, **options), unsafe_allow_html=True)




def head_label(head: int | None) -> str:
    """The library's head label spelled out: 'Mean of heads' or 'Head k' (1-based); None or -1 is the mean."""
    return decode.head_label(head, spelled=True)


def layer_picker(label: str, n_layers: int, key: str) -> int:
    """Select a layer (0-based value, 1-based label); keeps the choice valid when the model changes."""
    if st.session_state.get(key) not in range(n_layers):
        st.session_state[key] = n_layers - 1
    return st.selectbox(label, list(range(n_layers)), format_func=lambda i: f"Layer {i + 1}", key=key)


def head_picker(label: str, n_heads: int, key: str) -> int | None:
    """Select one head or the mean of heads (returned as None; stored as -1 in session state)."""
    options = [MEAN_HEAD, *range(n_heads)]
    if st.session_state.get(key) not in options:
        st.session_state[key] = MEAN_HEAD
    head = st.selectbox(label, options, format_func=head_label, key=key)
    return None if head == MEAN_HEAD else head


def kind_picker(label: str, key: str, *, horizontal: bool = True) -> str:
    """Choose encoder self-, decoder self- or cross-attention."""
    st.session_state.setdefault(key, "cross")
    return st.radio(label, list(KIND_TITLES), format_func=KIND_TITLES.__getitem__, key=key, horizontal=horizontal)


def grid_cell(n_heads: int, largest: int, width: int = 940) -> int:
    """Panel size of a heads-plus-mean grid so that one row of panels fits `width` pixels."""
    return int(max(60, min(largest, width / (n_heads + 1) - 12)))


def chart_downloads(make_png: Callable[[], bytes], make_svg: Callable[[], str], stem: str, key: str) -> None:
    """PNG and SVG download buttons whose files are made only when clicked."""
    left, right = st.columns(2)
    left.download_button("PNG", data=make_png, file_name=f"{stem}.png", mime="image/png", key=f"{key}_png",
                         icon=":material/image:", on_click="ignore", width="stretch")
    right.download_button("SVG", data=make_svg, file_name=f"{stem}.svg", mime="image/svg+xml", key=f"{key}_svg",
                          icon=":material/draw:", on_click="ignore", width="stretch")


def chart_spec(chart: alt.TopLevelMixin) -> dict[str, Any]:
    """The chart's Vega-Lite spec, not re-validated (the builders are validated by the tests; validation was ~40%
    of a Decode rerun), with its datasets renamed studio_data_0, studio_data_1 … in order.

    Altair names a dataset by a hash of its rows, so new data made a new spec, and the browser rebuilt the whole
    Vega view. With stable names a chart whose layout did not change only gets its data replaced.
    """
    spec = chart.to_dict(validate=False)
    if not spec.get("datasets"):
        return spec
    text = json.dumps(spec)
    for i, name in enumerate(spec["datasets"]):
        text = text.replace(json.dumps(name), f'"studio_data_{i}"')  # not data_N: Vega-Lite's own names
    return json.loads(text)


def chart_heading(text: str) -> None:
    """A chart's title drawn by the page: what changes at every step stays out of the chart's spec, so the browser
    swaps the chart's data instead of rebuilding it (the Decode page's step charts)."""
    st.markdown(f'<p class="studio-chart-heading">{html.escape(text)}</p>', unsafe_allow_html=True)


def show_chart(chart: alt.TopLevelMixin | dict[str, Any], **kwargs: Any) -> Any:
    """st.altair_chart without re-validating the spec on every rerun (or a spec from ui.chart_cache). Same arguments
    and return value."""
    return st.vega_lite_chart(spec=chart if isinstance(chart, dict) else chart_spec(chart), **kwargs)
