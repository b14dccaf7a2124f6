"""Small widgets the pages share: token chips, a small table, layer/head pickers, downloads and the no-model message."""
from __future__ import annotations

import copy
import html
import json
import math
import re
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, NamedTuple, Sequence, TypeAlias

import altair as alt
import pandas as pd
import streamlit as st

from transformer.analysis import group_head_label
from transformer.charts import slide_pdf, slide_png, slide_svg
from transformer.charts import visible_token as visible
from transformer.decode import ALL_TITLES, MEAN_HEAD, AttentionTrace, head_label
from transformer.model import ModelFamily
from ui.models import LOAD_ERROR_KEY, ActiveModel, current_model
from ui.server import audience_refusal

from .head_link import picker_head_link

PAGE_PX = 760  # the main column at a 1280-px window with the sidebar open: the most a full-width chart may take
MAP_LABELS_PX = 190  # a map's token labels and colour legend beside its plotting area
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
        title = f"position {i + 1}"
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
    rows = "".join("<tr>" + "".join(cell(value, column) for value, column in zip(row, columns.values(), strict=True))
                   + "</tr>" for row in frame[list(columns)].itertuples(index=False))
    return f'<div class="studio-table"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'


def show_small_table(frame: pd.DataFrame, columns: dict[str, Column], key: str) -> None:
    """A few rows of numbers as a plain HTML table: it draws with the page's Markdown, where st.dataframe first loads
    ~1.2 MB of data-grid code (no sorting or search here; at most ~10 rows show, the rest scroll)."""
    with st.container(key=key):
        st.markdown(small_table(frame, columns), unsafe_allow_html=True)


def show_chips(tokens: Sequence[str], weights: Sequence[float] | None = None, **options) -> None:
    """Render token chips (tokens are HTML-escaped)."""
    st.markdown(token_chips(tokens, weights, **options), unsafe_allow_html=True)




def layer_picker(label: str, n_layers: int, key: str) -> int:
    """Select a layer (0-based value, 1-based label); keeps the choice valid when the model changes."""
    if st.session_state.get(key) not in range(n_layers):
        st.session_state[key] = n_layers - 1
    return st.selectbox(label, list(range(n_layers)), format_func=lambda i: f"Layer {i + 1}", key=key)


def group_head_name(trace: AttentionTrace | None, kind: str | None, head: int | None) -> str:
    """'Head 3 · kv2' for a query head of a grouped-query model, else 'Head 3' / 'Mean of heads' (`head_label`)."""
    if head is None or head == MEAN_HEAD or trace is None or kind is None:
        return head_label(head, spelled=True)
    return group_head_label(trace, kind, head, spelled=True)


def head_picker(label: str, n_heads: int, key: str, *, trace: AttentionTrace | None = None,
                kind: str | None = None) -> int | None:
    """Select one head or the mean of heads (returned as None; stored as -1 in session state); given the trace and
    kind, a grouped-query model's heads are labelled with their key/value group; on the Attention and Decode pages a
    link below opens the picked head's page."""
    options = [MEAN_HEAD, *range(n_heads)]
    if st.session_state.get(key) not in options:
        st.session_state[key] = MEAN_HEAD
    head = st.selectbox(label, options, format_func=partial(group_head_name, trace, kind), key=key)
    head = None if head == MEAN_HEAD else head
    picker_head_link(key, kind, head)  # the Attention and Decode pages' pickers: a link to the head's page
    return head


def map_kind(of: AttentionTrace | ModelFamily) -> str:
    """The kind a step's source shading and map show: cross-attention where there is one, else the decoder's own."""
    spec = of if isinstance(of, ModelFamily) else of.family
    return spec.cross_kind or spec.output_kind


def kind_title(kind: str) -> str:
    """The title of any family's kind ("Cross-attention", "Self-attention (causal)")."""
    return ALL_TITLES[kind]


def kind_picker(label: str, key: str, trace: AttentionTrace, *, horizontal: bool = True) -> str:
    """Choose one of the trace's attention kinds; a stored kind the model does not have falls back to its map kind."""
    if st.session_state.get(key) not in trace.kinds:
        st.session_state[key] = map_kind(trace)
    return st.radio(label, list(trace.kinds), format_func=kind_title, key=key, horizontal=horizontal)


GRID_LEGEND_PX = 80  # a grid's colour legend beside its panels: its gradient, its numbers and its title "weight"


def grid_cell(n_heads: int, largest: int, width: int = PAGE_PX) -> int:
    """Panel size of a heads-plus-mean grid so that one row of panels and the colour legend fit `width` pixels (down
    to 28 px a panel: bart-large's 16 heads and the mean fit a 1280-px window; more heads scroll inside the chart)."""
    room = width - 30 - GRID_LEGEND_PX  # 30 px: the row's label and margins
    return int(max(28, min(largest, room / (n_heads + 1) - 12)))


def chart_downloads(make_png: Callable[[], bytes], make_svg: Callable[[], str], stem: str, key: str) -> None:
    """PNG and SVG download buttons whose files are made only when clicked; switched off for the audience (the
    speaker's machine would render them), the reason as their help."""
    why = audience_refusal("render")
    png, svg = (b"", "") if why else (make_png, make_svg)  # nothing to render behind a switched-off button
    left, right = st.columns(2)
    left.download_button("PNG", data=png, file_name=f"{stem}.png", mime="image/png", key=f"{key}_png",
                         icon=":material/image:", on_click="ignore", width="stretch", disabled=bool(why), help=why)
    right.download_button("SVG", data=svg, file_name=f"{stem}.svg", mime="image/svg+xml", key=f"{key}_svg",
                          icon=":material/draw:", on_click="ignore", width="stretch", disabled=bool(why), help=why)


SLIDES_SUFFIX = "_slides"  # the key of every "Download for slides" ends so: presenter mode hides them by it
Chart: TypeAlias = "alt.TopLevelMixin | dict[str, Any]"


@dataclass(frozen=True)
class SlideTitle:
    """What a slide's title says besides the view: the model with its weights, and the input."""

    model: str
    text: str
    reference: str | None = None

    def lines(self, view: str) -> list[str]:
        """The title lines of a slide of `view` (e.g. 'Cross-attention · layer 2 · head 1 · step 3 of 7')."""
        lines = [view, f"Input: {self.text}"]
        if self.reference:
            lines.append(f"Decoder fed the reference: {self.reference}")
        return [*lines, self.model]


def slide_downloads(chart: Chart, title_lines: Sequence[str], stem: str, key: str) -> None:
    """"Download for slides": the chart as on screen (an Altair chart or a spec of ui.views.kit.chart_cache) on a 16:9
    slide under `title_lines`, as SVG, PDF or PNG (1920x1080), each file made only when clicked. Hidden in presenter
    mode (its key ends in SLIDES_SUFFIX); switched off for the audience, the reason as its help."""
    why = audience_refusal("render")
    if why:
        st.popover("Download for slides", icon=":material/slideshow:", type="tertiary", key=f"{key}{SLIDES_SUFFIX}",
                   disabled=True, help=why)
        return
    if isinstance(chart, dict):
        chart = copy.deepcopy(chart)  # the file is made later, from the spec as it is now
    lines = list(title_lines)

    def make(render: Callable[[Chart, Sequence[str]], Any]) -> Callable[[], Any]:
        return lambda: render(chart, lines)

    with st.popover("Download for slides", icon=":material/slideshow:", type="tertiary", key=f"{key}{SLIDES_SUFFIX}",
                    help="This figure on a 16:9 slide with a title naming the model, input and view; text at least "
                         "14 px at 1920×1080."):
        for label, render, ext, mime, icon in (("PNG 1920×1080", slide_png, "png", "image/png", ":material/image:"),
                                               ("SVG", slide_svg, "svg", "image/svg+xml", ":material/draw:"),
                                               ("PDF", slide_pdf, "pdf", "application/pdf",
                                                ":material/picture_as_pdf:")):
            st.download_button(label, data=make(render), file_name=f"{stem}_slide.{ext}", mime=mime,
                               key=f"{key}{SLIDES_SUFFIX}_{ext}", icon=icon, on_click="ignore", width="stretch")


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
    """st.altair_chart without re-validating the spec on every rerun (or a spec from ui.chart_cache, left as it was:
    Streamlit takes the datasets out of the spec it gets). Same arguments and return value."""
    return st.vega_lite_chart(spec=dict(chart) if isinstance(chart, dict) else chart_spec(chart), **kwargs)


# the page may still grow under the chart (its tables and grids drawn after it), which keeps a first scroll short:
# scrolled again until its top stays put for a second, and never again once the user scrolls, types or clicks
_INTO_VIEW_JS = """<script>
(() => {
  let tries = 0, still = 0, user = false;
  for (const e of ['wheel', 'touchmove', 'keydown', 'mousedown'])
    window.addEventListener(e, () => { user = true; }, {once: true, capture: true});
  const go = () => {
    if (user) return;
    const box = document.querySelector('.st-key-KEY');
    if (box && box.querySelector('svg, canvas')) {
      if (Math.abs(box.getBoundingClientRect().top) > 2) { box.scrollIntoView({block: "start"}); still = 0; }
      else if (++still > 10) return;
    }
    if (++tries < 150) setTimeout(go, 100);
  };
  go();
})();
</script>"""


def bring_into_view(key: str) -> None:
    """Scroll the element drawn under `key` (a chart) to the top of the screen once it is drawn: what an example link
    promises, when the page's pickers above it push it past a 1280x720 first screen."""
    st.html(_INTO_VIEW_JS.replace("KEY", key), unsafe_allow_javascript=True)
