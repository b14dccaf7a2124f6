"""The edit-and-compare and patching charts stay within the page at real sizes (bart-large's 12 x 16 heads, a
512-token input): nothing wider than 1280 px, and a click names the cell it was on."""
from __future__ import annotations

import numpy as np
import pandas as pd

from transformer.analysis import CHANGED, SAME, AlignedDifference
from transformer.charts import (
    EDIT_WINDOW,
    aligned_difference_heatmap,
    clicked_patch_cell,
    head_movement_heatmap,
    patching_heatmap,
)

N = 512


def _width(chart) -> float:
    spec = chart.to_dict()
    return float(spec["width"])


def test_maps_of_a_maximum_length_input_fit_the_page():
    tokens = tuple(f"t{i}" for i in range(N))
    weights = np.full((2, 3, N, N), 1.0 / N)
    diff = AlignedDifference("encoder_self", tokens, tokens, (SAME,) * N, (SAME,) * N, weights, weights)
    assert _width(aligned_difference_heatmap(diff, 0, None)) <= 1280
    ranking = pd.DataFrame([{"kind": "cross", "layer": lay, "head": h, "mean_abs": 0.1, "max_abs": 0.2}
                            for lay in range(12) for h in range(16)])
    assert _width(head_movement_heatmap(ranking, "cross")) <= 1280
    residual = pd.DataFrame([{"site": "residual", "where": "encoder", "layer": lay, "head": -1, "position": p,
                              "token": tokens[p], "recovery": 0.0} for lay in range(13) for p in range(N)])
    assert _width(patching_heatmap(residual)) <= 1280


def test_a_long_map_is_drawn_through_a_window_around_the_edit():
    tokens = tuple(f"t{i}" for i in range(N))
    status = tuple(CHANGED if i == 300 else SAME for i in range(N))  # one swapped token, far from the start
    a = np.random.default_rng(0).random((1, 2, N, N))
    b = a.copy()
    b[0, :, :, 300] += 0.5
    diff = AlignedDifference("encoder_self", tokens, tokens, status, status, a, b)
    spec = aligned_difference_heatmap(diff, 0, None).to_dict()
    frame = pd.DataFrame(next(iter(spec["datasets"].values())))
    assert len(frame) == EDIT_WINDOW ** 2  # not 512 x 512 cells
    assert set(frame["query_token"]) == {f"t{i}" for i in range(300 - EDIT_WINDOW // 2, 300 + EDIT_WINDOW // 2)}
    moved = frame[frame["key_token"] == "t300"]
    assert np.allclose(moved["difference"], 0.5) and np.allclose(frame[frame["key_token"] != "t300"]["difference"], 0)
    later = pd.DataFrame(next(iter(aligned_difference_heatmap(diff, 0, 1, rows=(500, N), cols=(0, 12))
                                   .to_dict()["datasets"].values())))
    assert len(later) == 12 * 12 and later["query_token"].iloc[0] == "t500"  # the sliders' window


def test_a_click_names_the_patched_cell():
    event = {"selection": {"patch_cell": [{"site": "head", "where": "cross", "layer": 2, "head": 5,
                                           "position": 7}]}}
    assert clicked_patch_cell(event) == {"site": "head", "where": "cross", "layer": 2, "head": 5, "position": 7}
    assert clicked_patch_cell({"selection": {"patch_cell": []}}) is None
    assert clicked_patch_cell(None) is None
