"""A long input's overview in token positions: each drawn cell covers the tokens whose weights it pools, the brush
spans both axes over those positions, and a drag's selection maps to the token region it covers (snapped to whole
tokens, clipped to the input, cut to the zoom's side, refused in one line when outside); its colour scale is log
(the floor named in the legend) or linear, and either way the data's weights stay each cell's exact max."""
from __future__ import annotations

import pytest
import torch

from transformer.analysis import summarise_layer
from transformer.charts.attention.overview import (
    OVERVIEW_BRUSH,
    brushed_ends,
    brushed_region,
    log_floor,
    overview_chart,
    overview_frame,
)
from transformer.charts.window import drag_window
from transformer.model import AttentionStore, ScoreRules, layer_store

N, RESOLUTION = 1000, 96  # cells of 11 tokens, the last one of 10


@pytest.fixture(scope="module")
def store() -> AttentionStore:
    g = torch.Generator().manual_seed(3)
    queries, keys = torch.randn(2, N, 8, generator=g) * 2, torch.randn(1, N, 8, generator=g) * 2
    return AttentionStore({"self": (layer_store(queries, keys, ScoreRules(0.35, causal=True), (0, 0)),)})


def test_each_cell_is_drawn_over_the_tokens_whose_weights_it_pools(store):
    grid = summarise_layer(store, "self", 0, resolution=RESOLUTION).overview[1]
    frame = overview_frame(grid, N, N, RESOLUTION)
    assert len(frame) == grid.numel() and frame["row_end"].max() == N and frame["key_end"].max() == N
    for i in (0, 37, len(frame) - 1, len(frame) // 2 + 5):
        cell = frame.iloc[i]
        exact = store.tile("self", 0, 1, slice(int(cell["row"]), int(cell["row_end"])),
                           slice(int(cell["key"]), int(cell["key_end"])))
        assert cell["weight"] == pytest.approx(float(exact.max()), abs=1e-6)
    with pytest.raises(ValueError, match="is not the overview of 1000 rows"):
        overview_frame(grid, N, N, 64)


def test_the_brush_spans_both_axes_in_token_positions(store):
    grid = summarise_layer(store, "self", 0, resolution=RESOLUTION).overview[0]
    spec = overview_chart(overview_frame(grid, N, N, RESOLUTION), N, N, "Overview", ((0, 10), (5, 9))).to_dict()
    brush = next(p for p in spec["params"] if p["name"] == OVERVIEW_BRUSH)
    assert brush["select"]["type"] == "interval" and brush["select"]["encodings"] == ["x", "y"]
    cells, box = spec["layer"]
    assert cells["encoding"]["x"]["field"] == "key" and cells["encoding"]["y"]["field"] == "row"
    for channel in ("x", "y"):  # the axes' domains are the input's positions, exactly: a drag reads token positions
        assert cells["encoding"][channel]["scale"]["domain"] == [0, N]
        assert cells["encoding"][channel]["scale"]["nice"] is False
    assert cells["encoding"]["y"]["scale"]["reverse"] is True  # row 0 at the top, as every map
    assert box["mark"]["fill"] is None and spec["width"] <= 1280


def test_a_drag_maps_to_the_tokens_it_covers():
    # what Streamlit hands back after a drag: each axis's two ends, in the axis's data (token positions)
    state = {"selection": {OVERVIEW_BRUSH: {"key": [120.4, 351.7], "row": [899.2, 640.9]}}}
    ends = brushed_ends(state)
    assert ends == ((899.2, 640.9), (120.4, 351.7))
    assert brushed_region(ends, N, N, 1024) == ((640, 900), (120, 352))  # snapped outward, either order
    assert brushed_region(((990.5, 1040.0), (-30.0, 12.2)), N, N, 1024) == ((990, 1000), (0, 13))  # clipped
    assert brushed_region(((0.0, 1000.0), (100.0, 700.0)), N, N, 256) == ((0, 256), (100, 356))  # cut from the start
    with pytest.raises(ValueError, match=r"^the keys 1,200–1,300 lie outside the input's 1,000 tokens \(0–999\)$"):
        brushed_region(((10.0, 20.0), (1200.0, 1300.0)), N, N, 1024)
    assert brushed_ends({"selection": {OVERVIEW_BRUSH: {}}}) is None and brushed_ends(None) is None
    assert drag_window(3.0, 3.0, 10, 4) == (3, 4) and drag_window(3.2, 3.7, 10, 4) == (3, 4)  # within one token


def _cells(spec: dict) -> tuple[dict, list[dict]]:
    cells = spec["layer"][0]
    return cells, spec["datasets"][(cells.get("data") or spec["data"])["name"]]  # a lone layer's data is hoisted


def test_the_colour_scale_is_log_by_default_with_its_floor_named_and_linear_on_request(store):
    # row 0 attends only to itself (1.0), the rest ~0.001-0.01: the case a linear scale draws all pale
    grid = torch.full((4, 4), 0.004)
    grid[0, 0], grid[1, 2], grid[3, 1], grid[0, 3] = 1.0, 0.001, 0.01, 0.0  # 0: a cell wholly above the diagonal
    frame = overview_frame(grid, 40, 40, 4)
    assert log_floor(frame["weight"]) == pytest.approx(1e-3)  # the power of ten under the 5th percentile
    log = overview_chart(frame, 40, 40, "Overview").to_dict()
    cells, data = _cells(log)
    color = cells["encoding"]["color"]
    assert color["scale"]["type"] == "log" and color["scale"]["domain"] == [pytest.approx(1e-3), 1.0]
    assert color["title"] == ["max weight", "log; under 1e-3 as 1e-3"]
    assert color["field"] == "drawn" and "transform" not in cells  # a transform would keep Streamlit off canvas
    assert [r["drawn"] for r in data] == pytest.approx(grid.clamp(min=1e-3).reshape(-1).double().tolist())
    linear = overview_chart(frame, 40, 40, "Overview", scale="linear").to_dict()
    lcells, ldata = _cells(linear)
    assert lcells["encoding"]["color"]["scale"]["type"] == "linear"
    assert lcells["encoding"]["color"]["scale"]["domain"] == [0, 1.0]
    assert lcells["encoding"]["color"]["title"] == ["max weight", "linear, 0 to the max"]
    assert lcells["encoding"]["color"]["field"] == "weight" and "transform" not in lcells
    for rows in (data, ldata):  # the weights handed to the chart (and its tooltip) are the grid's, unchanged
        assert [r["weight"] for r in rows] == pytest.approx(grid.reshape(-1).double().tolist(), abs=0)
    assert {t["field"] for t in cells["encoding"]["tooltip"]} >= {"weight"}
    with pytest.raises(ValueError, match="colour scale 'sqrt' is not one of log, linear"):
        overview_chart(frame, 40, 40, "Overview", scale="sqrt")


def test_the_log_floor_on_a_real_head_keeps_each_weight_its_pooled_max(store):
    grid = summarise_layer(store, "self", 0, resolution=RESOLUTION).overview[0]
    frame = overview_frame(grid, N, N, RESOLUTION)
    floor = log_floor(frame["weight"])
    positive = frame["weight"][frame["weight"] > 0]
    assert floor <= positive.quantile(0.05) < 10 * floor and floor < positive.max()  # a power of ten, named
    assert floor == pytest.approx(10.0 ** round(float(torch.tensor(floor).log10())))
    spec = overview_chart(frame, N, N, "Overview").to_dict()
    cells, data = _cells(spec)
    assert cells["encoding"]["color"]["title"][1] == f"log; under {floor:.0e} as {floor:.0e}".replace("e-0", "e-")
    for i in (0, 41, len(data) - 1):
        row = data[i]
        exact = store.tile("self", 0, 0, slice(int(row["row"]), int(row["row_end"])),
                           slice(int(row["key"]), int(row["key_end"])))
        assert row["weight"] == pytest.approx(float(exact.max()), abs=1e-6)
    assert log_floor([0.0, 0.0]) == 1e-3 and log_floor([0.5]) == pytest.approx(0.1)  # below the max, always
