"""The all-heads grid as one chart with shared data (attention_panels): bart-large's 12 x 16 heads in one spec."""
from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.helpers.chart_traces import random_trace
from transformer.charts import (
    MASKED_COLOR,
    ChartTooLargeError,
    attention_panels,
    chart_to_svg,
    layers_that_fit,
    selected_panel,
)
from transformer.decode import MEAN_HEAD

TOKENS = [f"w{i}" for i in range(24)]


@pytest.fixture(scope="module")
def bart_large_trace():
    """bart-large's decoder: 12 layers x 16 heads, on 24 source and target tokens (a 20-word input)."""
    return random_trace(TOKENS, ["<s>", *TOKENS[:23]], layers=12, heads=16)


def _data(spec: dict, mark: str) -> list[dict]:
    layer = next(part for part in spec["layer"] if (part["mark"]["type"] if isinstance(part["mark"], dict)
                                                    else part["mark"]) == mark)
    return spec["datasets"][layer["data"]["name"]]


def test_bart_large_grid_is_one_chart_of_204_panel_images(bart_large_trace):
    spec = attention_panels(bart_large_trace, "cross", cell=60).to_dict()
    assert "facet" not in spec and "layer" in spec  # one view: no per-panel scales, axes or dataflow
    images = _data(spec, "image")
    assert len(images) == 12 * 17
    assert {(row["layer"], row["head"]) for row in images} == {(lay, h) for lay in range(12)
                                                                for h in [*range(16), MEAN_HEAD]}
    assert {row["panel"] for row in images} >= {"L1 H1", "L12 H16", "L12 mean"}
    assert spec["usermeta"] == {"embedOptions": {"renderer": "svg"}}
    (selection,) = spec["params"]  # a click selects a panel: read back by selected_panel, as the facet grid's
    assert selection["name"] == "cell" and selection["select"]["fields"] == ["layer", "head"]
    assert spec["title"]["text"] == "Cross-attention · 12 layers × 16 heads and mean"


def test_a_panel_image_shows_its_weights(bart_large_trace):
    trace = random_trace(["a", "b"], ["<s>", "x", "y"], layers=1, heads=1)
    trace.decoder_self[:] = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0]])
    spec = attention_panels(trace, "decoder_self", cell=30).to_dict()
    head = next(row for row in _data(spec, "image") if row["head"] == 0)
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(head["url"].split(",", 1)[1]))).convert("RGB"))
    scale = image.shape[0] // 3
    assert image.shape == (3 * scale, 3 * scale, 3)
    darkest, lightest, grey = (8, 48, 107), (247, 251, 255), tuple(int(MASKED_COLOR[i:i + 2], 16) for i in (1, 3, 5))
    assert tuple(image[0, 0]) == darkest  # query 0 on key 0: weight 1
    assert tuple(image[0, scale]) == grey  # query 0 on key 1: the causal mask
    assert tuple(image[scale, 0]) == lightest  # query 1 on key 0: weight 0


def test_rects_draw_every_cell_on_canvas(bart_large_trace):
    spec = attention_panels(bart_large_trace, "cross", layers=[10, 11], draw="rects").to_dict()
    assert len(_data(spec, "rect")) == 2 * 17 * 24 * 24
    assert spec["usermeta"] == {"embedOptions": {"renderer": "canvas"}}


def test_a_range_of_layers_switched_off_heads_and_an_export(bart_large_trace):
    chart = attention_panels(bart_large_trace, "decoder_self", layers=[4, 5, 6, 7], off=[(5, 2)], max_row=3,
                             clicks="switch")
    images = _data(chart.to_dict(), "image")
    assert chart.to_dict()["title"]["text"].startswith("Decoder self-attention · layers 5–8 of 12 ×")
    assert sorted({row["layer"] for row in images}) == [4, 5, 6, 7]
    assert "L6 H3 · off" in {row["panel"] for row in images}
    assert "L5 H1" in chart_to_svg(chart)


def test_too_many_cells_raise_and_say_how_many_layers_fit():
    long = random_trace([f"s{i}" for i in range(300)], [f"t{i}" for i in range(200)], layers=12, heads=16)
    fit = layers_that_fit(long, "cross")
    assert 0 < fit < 12
    attention_panels(long, "cross", layers=range(fit))
    with pytest.raises(ChartTooLargeError, match="fewer layers"):
        attention_panels(long, "cross")
    with pytest.raises(IndexError):
        attention_panels(long, "cross", layers=[12])


def test_selected_panel_reads_the_panels_selection():
    assert selected_panel({"selection": {"cell": [{"layer": 3, "head": MEAN_HEAD}]}}) == (3, None)


def test_a_window_of_keys_is_what_every_panel_draws():
    """A long input's grid shows the keys of the window: each image as wide as those keys, the rects' keys within it
    (tooltips still name the real positions), and the title says which."""
    trace = random_trace([f"s{i}" for i in range(10)], ["<s>", "x", "y"], layers=1, heads=2)
    trace.cross[0, 0, :, 4] = 1.0  # head 1: every row on key 5 (index 4)
    spec = attention_panels(trace, "cross", cell=40, keys=(3, 6)).to_dict()
    assert spec["title"]["text"].endswith("heads and mean · keys 4–6 of 10")
    head = next(row for row in _data(spec, "image") if row["head"] == 0)
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(head["url"].split(",", 1)[1]))).convert("RGB"))
    scale = image.shape[1] // 3
    assert image.shape[:2] == (3 * scale, 3 * scale)  # 3 rows x the 3 keys of the window
    column = image[:, scale + scale // 2]  # the window's second key: key 5, where every row looks
    assert (column.astype(int).sum(-1) < 300).all()  # dark
    rects = attention_panels(trace, "cross", cell=40, keys=(3, 6), draw="rects").to_dict()
    (data,) = (d for d in rects["datasets"].values() if d and "k" in d[0])
    assert {row["k"] for row in data} == {3, 4, 5}


def test_panel_labels_fit_beside_each_other(bart_large_trace):
    """'L10 H10' above a 30-px panel: the header font shrinks so that a label never runs into the next one."""
    font_file = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")  # the widest of the usual sans fonts
    if not font_file.is_file():
        pytest.skip("DejaVu Sans Bold is not installed")
    from PIL import ImageFont
    sizes = []
    for cell in (30, 60, 130):
        spec = attention_panels(bart_large_trace, "cross", cell=cell).to_dict()
        header = next(part for part in spec["layer"] if part["mark"]["type"] == "text")
        size = header["mark"]["fontSize"]
        font = ImageFont.truetype(str(font_file), size)
        rows: dict[float, list[tuple[float, str]]] = {}
        for label in spec["datasets"][header["data"]["name"]]:
            rows.setdefault(label["y"], []).append((label["x"], label["panel"]))
        for row in rows.values():
            row.sort()
            for (x, text), (next_x, _) in zip(row, row[1:], strict=False):
                assert font.getlength(text) <= next_x - x, (cell, size, text)
        sizes.append(size)
    assert sizes[0] < sizes[-1] == 11  # small panels get a smaller font; roomy ones the usual 11 px
