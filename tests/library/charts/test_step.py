"""Charts of one decoding step: token strips sized to their words and wrapped, and the top-k bars."""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers.chart_traces import GERMAN, layer_data
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
    widths = dict(zip(data["token"], data["x1"] - data["x0"], strict=True))
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
    chart = topk_bars([("</s>", 0.6), ("<s>", 0.3), ("7", 0.1), (" ", 0.0)], chosen="<s>")
    data = layer_data(chart)
    assert data["percent"].tolist() == pytest.approx([60.0, 30.0, 10.0, 0.0])
    assert data["percent_text"].tolist() == ["60.0%", "30.0%", "10.0%", "0.0%"]
    assert data["chosen"].tolist() == [False, True, False, False]
    assert data["token"].tolist() == ["</s>", "<s>", "7", "␣"]  # visible, and each its own bar
    spec = chart.to_dict()
    assert spec["layer"][0]["encoding"]["color"]["condition"]["value"] == CHOSEN_COLOR
    drawn = re.findall(r">([^<>]+)</text>", chart_to_svg(chart))
    assert ["&lt;/s&gt;", "&lt;s&gt;", "7", "␣"] == [t for t in drawn if t in {"&lt;/s&gt;", "&lt;s&gt;", "7", "␣"}]
    assert {"60.0%", "30.0%", "10.0%"} <= set(drawn)  # most likely on top, tokens shown literally
    same = topk_bars([("a", 0.5), ("a", 0.5)])  # alike once visible: still two bars
    assert layer_data(same)["token"].tolist() == ["a", "a (2)"]
    spec_step_1 = json.dumps(chart.to_dict()["layer"])
    spec_step_2 = json.dumps(topk_bars([("x", 0.9), ("y", 0.05), ("z", 0.03), ("w", 0.02)], chosen="x")
                             .to_dict()["layer"])
    assert re.sub(r"data-[0-9a-f]+", "", spec_step_1) == re.sub(r"data-[0-9a-f]+", "", spec_step_2)  # data only
