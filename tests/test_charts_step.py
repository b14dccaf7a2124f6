"""Charts of one decoding step: token strips sized to their words and wrapped, and the top-k bars."""
from __future__ import annotations

import re

import pytest
from chart_traces import GERMAN, layer_data

from transformer.charts import (
    CHOSEN_COLOR,
    STRIP_FONT_SIZE,
    chart_to_png,
    chart_to_svg,
    decoder_row_chart,
    source_strip,
    text_width,
    topk_bars,
)


def test_strips_shade_each_token_by_its_weight():
    chart = source_strip(["the", "cat", "the"], [0.1, 0.7, 0.2], title="step 2")
    data = layer_data(chart)
    assert data["token"].tolist() == ["the", "cat", "the"] and data["position"].tolist() == [0, 1, 2]
    assert data["weight"].tolist() == [0.1, 0.7, 0.2]
    spec = chart.to_dict()
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == [0.0, 1.0]
    assert spec["layer"][1]["mark"]["type"] == "text"
    assert layer_data(decoder_row_chart(["<s>", " "], [0.5, 0.5]))["token"].tolist() == ["<s>", "␣"]
    with pytest.raises(ValueError, match="2 tokens but 3 weights"):
        source_strip(["a", "b"], [0.1, 0.2, 0.7])


def test_each_word_gets_a_cell_as_wide_as_its_text_and_rows_wrap_to_the_width():
    weights = [1 / len(GERMAN)] * len(GERMAN)
    chart = source_strip(GERMAN, weights, max_width=600)
    data = layer_data(chart)
    widths = dict(zip(data["token"], data["x1"] - data["x0"]))
    assert widths["interessantes"] > widths["gestern"] > widths["ich"]
    for token, width in widths.items():
        assert text_width(token, STRIP_FONT_SIZE) < width  # the word fits its cell
    assert chart.width <= 600 and data["x1"].max() <= 600
    rows = sorted(data["y0"].unique())
    assert len(rows) >= 2 and chart.height == data["y1"].max()
    for _, row in data.groupby("y0"):  # reading order: left to right, then the next row
        assert row["x0"].is_monotonic_increasing
    assert data.sort_values(["y0", "x0"])["position"].tolist() == list(range(len(GERMAN)))
    assert len(set(layer_data(source_strip(GERMAN, weights, max_width=2000))["y0"])) == 1  # room: one row


def test_the_prefix_strip_keeps_the_size_of_the_whole_output_while_it_grows():
    full = decoder_row_chart(GERMAN, [0.1] * len(GERMAN), max_width=400)
    for n in (1, 3, len(GERMAN)):
        chart = decoder_row_chart(GERMAN[:n], [0.1] * n, max_width=400, all_tokens=GERMAN)
        assert (chart.width, chart.height) == (full.width, full.height)  # it does not jump while stepping
        data = layer_data(chart)
        assert data["token"].tolist() == GERMAN[:n]  # only the prefix is drawn, where it sits in the full output
        assert data[["x0", "y0"]].values.tolist() == layer_data(full)[["x0", "y0"]].values[:n].tolist()
    with pytest.raises(ValueError, match="must start with the tokens shown"):
        decoder_row_chart(["x"], [1.0], all_tokens=GERMAN)


def test_strips_draw_every_word_whole():
    chart = decoder_row_chart(GERMAN, [0.5] * len(GERMAN), max_width=500, title="prefix")
    drawn = set(re.findall(r">([^<>]+)</text>", chart_to_svg(chart)))
    assert {t.replace("<", "&lt;").replace(">", "&gt;") for t in GERMAN} <= drawn
    assert chart_to_png(chart, scale=1.0)[:8] == b"\x89PNG\r\n\x1a\n"


def test_topk_bars_highlight_the_chosen_token_and_show_percentages():
    fig = topk_bars([("</s>", 0.6), ("<s>", 0.3), ("7", 0.1)], chosen="<s>")
    bar = fig.data[0]
    assert list(bar.x) == pytest.approx([60.0, 30.0, 10.0])
    assert list(bar.text) == ["60.0%", "30.0%", "10.0%"]
    colors = list(bar.marker.color)
    assert colors[1] == CHOSEN_COLOR and colors[0] == colors[2] != CHOSEN_COLOR
    assert list(fig.layout.yaxis.ticktext) == ["&lt;/s&gt;", "<b>&lt;s&gt;</b>", "7"]  # shown literally
