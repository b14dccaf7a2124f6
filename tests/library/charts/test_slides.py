"""Slides of a view: every figure the app draws, on a 1920x1080 canvas under a title, no text under 14 px."""
from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from tests.helpers.chart_traces import ENGLISH, GERMAN, random_trace
from transformer.analysis import attention_difference
from transformer.charts import (
    MIN_FONT_PX,
    agreement_chart,
    alignment_table_chart,
    attention_grid,
    attention_heatmap,
    chart_to_svg,
    decoder_row_chart,
    difference_heatmap,
    importance_chart,
    slide_pdf,
    slide_png,
    slide_svg,
    source_strip,
    step_probability_chart,
    topk_bars,
)

TITLE = ["multi30k-en-de · weights of step 6,684", "“ich habe gestern abend …” · step 3 of 12 · layer 1 · head 2"]
TRACE = random_trace(GERMAN, ENGLISH, layers=2, heads=3)
HEADS = pd.DataFrame({"layer": [0, 0, 0, 1, 1, 1], "head": [0, 1, -1, 0, 1, -1],
                      "spearman": [0.5, -0.2, 0.1, 0.9, 0.3, 0.6], "top1": [0.5, 0.2, 0.1, 0.9, 0.3, 0.6]})
SWEEP = pd.DataFrame({"kind": ["cross"] * 4 + ["encoder_self"] * 4, "layer": [0, 0, 1, 1] * 2,
                      "head": [0, 1] * 4, "drop": np.linspace(-0.5, 2.0, 8)})
STEPS = pd.DataFrame({"step": [1, 2, 3], "intact": ["a", "b", "c"], "intact_prob": [0.9, 0.6, 0.8],
                      "ablated": ["a", "x", "c"], "ablated_prob": [0.8, 0.4, 0.7], "differs": [False, True, False]})
FIGURES = {
    "heatmap": lambda: attention_heatmap(TRACE, "cross", 0, 1),
    "mean_stepped": lambda: attention_heatmap(TRACE, "decoder_self", 1, None, max_row=3, highlight_row=3, title=""),
    "grid": lambda: attention_grid(TRACE, "cross", max_row=4),
    "source_strip": lambda: source_strip(GERMAN, np.full(len(GERMAN), 1 / len(GERMAN)), max_width=1000),
    "prefix_strip": lambda: decoder_row_chart(ENGLISH[:4], [0.1, 0.2, 0.3, 0.4], max_width=470, all_tokens=ENGLISH),
    "topk": lambda: topk_bars([("buch", 0.6), ("heft", 0.3), ("ein", 0.1)], "buch", width=240),
    "importance": lambda: importance_chart(SWEEP),
    "agreement": lambda: agreement_chart(HEADS, "spearman"),
    "alignment": lambda: alignment_table_chart(HEADS.rename(columns={"top1": "score"})[["layer", "head", "score"]]),
    "ablation_steps": lambda: step_probability_chart(STEPS),
    "compare": lambda: difference_heatmap(attention_difference(TRACE, random_trace(GERMAN, ENGLISH, seed=1),
                                                               "cross", 1, None), title="B − A"),
}


def _scale(transform: str) -> float:
    factor = 1.0
    for args in re.findall(r"scale\(([^)]*)\)", transform or ""):
        factor *= float(re.split(r"[ ,]+", args.strip())[0])
    return factor


def drawn_font_sizes(svg: str) -> list[tuple[float, str]]:
    """(size in pixels on the 1920x1080 canvas, text) of every text in an SVG, ancestors' scale() applied."""
    found = []

    def walk(node: ET.Element, factor: float) -> None:
        factor *= _scale(node.get("transform", ""))
        size = node.get("font-size") or (re.search(r"font-size:\s*([\d.]+)", node.get("style", "")) or [None, None])[1]
        if node.tag.endswith("text") and "".join(node.itertext()).strip():
            assert size is not None, "a text without a font size"
            found.append((float(str(size).removesuffix("px")) * factor, "".join(node.itertext())))
        for child in node:
            walk(child, factor)

    walk(ET.fromstring(svg), 1.0)
    return found


@pytest.mark.parametrize("figure", list(FIGURES))
def test_every_figure_fills_a_16_9_slide_with_text_legible_on_a_projector(figure):
    svg = slide_svg(FIGURES[figure](), TITLE)
    root = ET.fromstring(svg)
    assert (root.get("width"), root.get("height")) == ("1920", "1080")
    sizes = drawn_font_sizes(svg)
    assert [text for _, text in sizes[:2]] == TITLE  # the title block names model, sentence and step
    assert len(sizes) > 2  # and the chart's own texts follow
    small = [(round(px, 1), text) for px, text in sizes if px < MIN_FONT_PX - 1e-6]
    assert not small, f"texts under {MIN_FONT_PX} px: {small[:5]}"
    chart = root.find("{http://www.w3.org/2000/svg}g")
    assert _scale(chart.get("transform")) > 0.5  # the chart is scaled to the canvas, not left tiny in a corner


def test_png_is_exactly_1920_by_1080_and_pdf_is_one_16_9_page():
    chart = FIGURES["heatmap"]()
    png = slide_png(chart, TITLE)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (1920, 1080)
    pdf = slide_pdf(chart, TITLE)
    assert pdf.startswith(b"%PDF")
    boxes = re.findall(rb"/MediaBox\s*\[\s*([\d.\s]+)\]", pdf)
    assert boxes and all(abs((v := [float(x) for x in box.split()])[2] / v[3] - 16 / 9) < 1e-3 for box in boxes)


def test_a_title_from_user_text_stays_text():
    lines = ["<b>model</b> & co", "</svg><script>alert(1)</script>\u202e"]
    svg = slide_svg(FIGURES["topk"](), lines)
    texts = [text for _, text in drawn_font_sizes(svg)[:2]]
    assert texts[0] == lines[0] and texts[1].startswith("</svg><script>") and "U+202E" in texts[1]
    assert "<script" not in svg


@pytest.mark.slow  # a real process or a full evaluation
def test_a_chart_too_big_for_its_fonts_gets_larger_fonts_not_smaller_text():
    """6 layers x 8 heads: scaled down to fit, its 10 px labels would be 9 px; the slide raises them instead."""
    chart = attention_grid(random_trace(GERMAN[:6], ENGLISH[:5], layers=6, heads=8), "cross")
    plain = chart_to_svg(chart)
    width, height = (float(v) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', plain).groups())
    smallest = min(float(v) for v in re.findall(r'font-size="([\d.]+)', plain))
    assert smallest * min(1808 / width, 900 / height) < MIN_FONT_PX  # as drawn in the app, too small on a slide
    assert min(px for px, _ in drawn_font_sizes(slide_svg(chart, TITLE))) >= MIN_FONT_PX - 1e-6
