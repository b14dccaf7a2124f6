"""A chart as a 16:9 slide (SVG, PDF or 1920x1080 PNG) with a title block, legible on a projector (vl-convert, no
browser).

The chart is drawn as given, then scaled to fill the canvas under the title. Every text in it ends up at least
MIN_FONT_PX pixels tall at 1920x1080: font sizes below what that needs (after scaling) are raised in the spec, in
its config defaults and in its explicit settings alike, and the chart is drawn again, until they are.
"""
from __future__ import annotations

import copy
import html
import math
import re
from typing import Any, Iterable, Sequence

import altair as alt

from .export import ChartExportError, _vl_convert, _vl_version
from .style import text_width, visible_token

SLIDE_WIDTH, SLIDE_HEIGHT = 1920, 1080
MIN_FONT_PX = 14
_MARGIN = 56  # pixels around everything
_TITLE_PX, _LINE_PX = 44, 30  # the first title line, the lines after it
_TITLE_GAP = 28  # between the title block and the chart
_TRIES = 5
_FONT = "Helvetica, Arial, sans-serif"
# Vega-Lite's own default sizes of the texts a chart may draw without saying a size
_CONFIG_FONTS = {"axis": {"labelFontSize": 10, "titleFontSize": 11},
                 "legend": {"labelFontSize": 10, "titleFontSize": 11},
                 "header": {"labelFontSize": 10, "titleFontSize": 11},
                 "title": {"fontSize": 13, "subtitleFontSize": 10},
                 "text": {"fontSize": 11}, "mark": {"fontSize": 11}}
_SIZE = re.compile(r'<svg\b[^>]*?\bwidth="([\d.]+)"[^>]*?\bheight="([\d.]+)"')
_FONT_SIZE = re.compile(r'font-size="([\d.]+)(?:px)?"')


def _raise_fonts(node: Any, floor: float) -> None:
    """Raise, in place, every explicit font size below `floor` in a Vega-Lite spec (marks, axes, legends, titles)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if (key == "fontSize" or key.endswith("FontSize")) and isinstance(value, (int, float)) \
                    and not isinstance(value, bool):
                node[key] = max(value, floor)
            else:
                _raise_fonts(value, floor)
    elif isinstance(node, list):
        for item in node:
            _raise_fonts(item, floor)


def legible_spec(spec: dict, floor: float) -> dict:
    """A copy of `spec` whose texts are all at least `floor` pixels (before any scaling), defaults included."""
    out = copy.deepcopy(spec)
    _raise_fonts(out, floor)
    config = out.setdefault("config", {})
    for part, fonts in _CONFIG_FONTS.items():
        section = config.setdefault(part, {})
        for key, default in fonts.items():
            section[key] = max(float(section.get(key, default)), floor)
    return out


def _render(spec: dict) -> tuple[str, float, float, float]:
    """(SVG, width, height, smallest font size) of a Vega-Lite spec."""
    try:
        svg = _vl_convert().vegalite_to_svg(spec, vl_version=_vl_version())
    except Exception as exc:  # vl-convert raises plain ValueError/RuntimeError with the renderer's message
        raise ChartExportError(f"could not render the chart for a slide: {exc}") from exc
    size = _SIZE.search(svg)
    if size is None:
        raise ChartExportError("the rendered chart has no size")
    fonts = [float(f) for f in _FONT_SIZE.findall(svg)]
    return svg, float(size.group(1)), float(size.group(2)), min(fonts, default=math.inf)


def _fit(text: str, font_px: float, width: float) -> str:
    """`text` cut with "…" to fit `width` pixels at `font_px`."""
    if text_width(text, font_px) <= width:
        return text
    while text and text_width(text + "…", font_px) > width:
        text = text[:-1]
    return text + "…"


def _title_block(lines: Iterable[str]) -> tuple[list[str], float]:
    """SVG <text> elements of the title lines and the height they take."""
    elements, y = [], float(_MARGIN)
    for i, line in enumerate(line for line in lines if line):
        px = _TITLE_PX if i == 0 else _LINE_PX
        y += px
        shown = html.escape(_fit(visible_token(line), px, SLIDE_WIDTH - 2 * _MARGIN))
        weight = ' font-weight="bold"' if i == 0 else ""
        elements.append(f'<text x="{_MARGIN}" y="{y:.1f}" font-family="{_FONT}" font-size="{px}px"{weight} '
                        f'fill="{"#222" if i == 0 else "#555"}">{shown}</text>')
        y += 0.3 * px
    return elements, (y - _MARGIN + _TITLE_GAP) if elements else 0.0


def slide_svg(chart: alt.TopLevelMixin | dict, title_lines: Sequence[str] = ()) -> str:
    """The chart on a 1920x1080 SVG canvas under `title_lines` (e.g. model; sentence; step), scaled to fill it,
    with no text under MIN_FONT_PX pixels. Raises ChartExportError when the chart cannot be made legible."""
    if isinstance(title_lines, str):
        title_lines = [title_lines]
    spec = chart if isinstance(chart, dict) else chart.to_dict()
    titles, title_height = _title_block(title_lines)
    box_w, box_h = SLIDE_WIDTH - 2 * _MARGIN, SLIDE_HEIGHT - 2 * _MARGIN - title_height
    floor = 0.0
    for _ in range(_TRIES):
        svg, width, height, smallest = _render(legible_spec(spec, floor) if floor else spec)
        scale = min(box_w / width, box_h / height)
        if smallest * scale >= MIN_FONT_PX - 1e-6:
            break
        floor = max(floor, math.ceil(MIN_FONT_PX / scale * 10) / 10)
    else:
        raise ChartExportError(f"the chart is too large to show with text of at least {MIN_FONT_PX} px on one "
                               "slide; choose fewer layers or a shorter input")
    x = (SLIDE_WIDTH - width * scale) / 2
    y = _MARGIN + title_height + (box_h - height * scale) / 2
    return (f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1" '
            f'width="{SLIDE_WIDTH}" height="{SLIDE_HEIGHT}" viewBox="0 0 {SLIDE_WIDTH} {SLIDE_HEIGHT}">'
            f'<rect width="{SLIDE_WIDTH}" height="{SLIDE_HEIGHT}" fill="white"/>{"".join(titles)}'
            f'<g transform="translate({x:.2f},{y:.2f}) scale({scale:.5f})">{svg}</g></svg>')


def slide_png(chart: alt.TopLevelMixin | dict, title_lines: Sequence[str] = ()) -> bytes:
    """`slide_svg` as a PNG of exactly 1920x1080 pixels."""
    return _convert("svg_to_png", slide_svg(chart, title_lines), "PNG")


def slide_pdf(chart: alt.TopLevelMixin | dict, title_lines: Sequence[str] = ()) -> bytes:
    """`slide_svg` as a one-page 16:9 PDF."""
    return _convert("svg_to_pdf", slide_svg(chart, title_lines), "PDF")


def _convert(name: str, svg: str, what: str) -> bytes:
    try:
        return getattr(_vl_convert(), name)(svg, scale=1.0)
    except Exception as exc:
        raise ChartExportError(f"could not render the slide as {what}: {exc}") from exc
