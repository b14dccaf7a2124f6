"""A document's zoom: a region up to 1,024 x 1,024 recomputed exactly from the store and drawn at most 256 cells a
side, each cell the max of the exact weights it covers; a region of at most 256 a side is drawn weight by weight."""
from __future__ import annotations

import pytest
import torch

from transformer.analysis import TILE_SIDE, MapsSource
from transformer.charts import REGION_MAX, zoom_frame, zoom_spec
from transformer.model import AttentionStore, ScoreRules, layer_store


def _store(n: int) -> AttentionStore:
    g = torch.Generator().manual_seed(5)
    queries, keys = torch.randn(2, n, 8, generator=g) * 2, torch.randn(1, n, 8, generator=g) * 2
    return AttentionStore({"self": (layer_store(queries, keys, ScoreRules(0.35, causal=True), (0, 0)),)})


def _cells(frame) -> tuple[torch.Tensor, list, list]:
    rows, keys = sorted(set(frame["row"])), sorted(set(frame["key"]))
    grid = torch.tensor(frame.pivot(index="row", columns="key", values="weight").to_numpy())
    return grid, rows, keys


def test_a_region_wider_than_the_drawing_is_the_max_of_each_cell_of_exact_weights():
    store = _store(1100)
    region = ((1100 - REGION_MAX, 1100), (1100 - 700, 1100))
    frame, title, weights = zoom_frame(store, 0, 1, *region)
    exact = store.tile("self", 0, 1, slice(*region[0]), slice(*region[1]))
    torch.testing.assert_close(weights, exact, atol=0, rtol=0)  # the weights kept: every one, exact
    grid, rows, keys = _cells(frame)
    assert grid.shape == (TILE_SIDE, 234)  # 1,024 rows in cells of 4, 700 keys in cells of 3 (the last: 1)
    assert rows[:2] == [76, 80] and keys[:2] == [400, 403]
    torch.testing.assert_close(grid[5, 7].float(), exact[20:24, 21:24].max())
    torch.testing.assert_close(grid[-1, -1].float(), exact[-4:, -1:].max())
    assert "the max of each 4 × 3 cell" in title
    spec = zoom_spec(title, *region)  # the data goes beside the spec (as Arrow), not into it
    assert "data" not in spec and "datasets" not in spec and spec["title"] == title and spec["width"] <= 1280
    assert spec["encoding"]["x2"]["field"] == "key_end" and spec["encoding"]["y2"]["field"] == "row_end"
    cell = frame.iloc[-1]  # each drawn cell spans the tokens it pools, clipped to the region
    assert (cell["row_end"], cell["key_end"]) == (1100, 1100) and cell["key_end"] - cell["key"] == 1


def test_a_small_region_is_drawn_weight_by_weight():
    store = _store(300)
    frame, title, weights = zoom_frame(store, 0, 0, (40, 240), (10, 250))
    grid, rows, keys = _cells(frame)
    assert grid.shape == (200, 240) and rows[0] == 40 and keys[0] == 10
    torch.testing.assert_close(grid.float(), weights)
    assert title.endswith("exact weights")


def test_the_zoom_reads_a_short_inputs_maps_alike():
    store = _store(300)
    maps = MapsSource({"self": store.dense("self")}, frozenset({"self"}))
    stored, _, a = zoom_frame(store, 0, 1, (0, 300), (0, 300))
    drawn, _, b = zoom_frame(maps, 0, 1, (0, 300), (0, 300))
    torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
    assert stored["weight"].to_numpy() == pytest.approx(drawn["weight"].to_numpy(), abs=1e-6)
