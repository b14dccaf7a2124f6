"""A long input's exact views as drawn: the overview and the zoomed tile have axes titled and ticked in token
positions; a small zoom names its tokens from data (a parameter's value, never inside a Vega expression); a query's
row strip is scaled to the row's own max (a diffuse row's ~1/N weights still show its shape) with its top keys
marked and labelled from the data."""
from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from transformer.analysis import summarise_layer
from transformer.charts import (
    overview_chart,
    overview_frame,
    row_strip_chart,
    row_strip_frames,
    tile_sizes,
    zoom_chart,
    zoom_labelled,
    zoom_tokens,
)
from transformer.model import AttentionStore, ScoreRules, layer_store

N = 400
TOKENS = [f"t{i}" for i in range(N - 3)] + ["if", '"', "</script>"]  # tokens that broke expressions before


@pytest.fixture(scope="module")
def store() -> AttentionStore:
    g = torch.Generator().manual_seed(7)
    queries, keys = torch.randn(2, N, 8, generator=g) * 2, torch.randn(1, N, 8, generator=g) * 2
    return AttentionStore({"self": (layer_store(queries, keys, ScoreRules(0.35, causal=True), (0, 0)),)})


def _axes(spec: dict) -> dict:
    enc = spec["layer"][0]["encoding"] if "layer" in spec else spec["encoding"]
    return {c: enc[c] for c in ("x", "y")}


def _title(channel: dict) -> str:
    return channel.get("title") or channel["axis"]["title"]


def test_the_overview_is_a_map_of_rows_by_keys_titled_in_token_positions(store):
    grid = summarise_layer(store, "self", 0, resolution=96).overview[0]
    spec = overview_chart(overview_frame(grid, N, N, 96), N, N, "Overview", width=460, height=460).to_dict()
    axes = _axes(spec)
    assert _title(axes["y"]) == "query position (row)" and _title(axes["x"]) == "key position"
    assert axes["x"]["type"] == axes["y"]["type"] == "quantitative"  # ticks at token positions
    assert spec["width"] == spec["height"] == 460


def test_a_large_zoom_is_ticked_in_token_positions():
    spec = zoom_chart("Rows 100–399 × keys 50–349", (100, 400), (50, 350), TOKENS).to_dict(validate=False)
    axes = _axes(spec)
    assert _title(axes["x"]) == "key position" and _title(axes["y"]) == "query position (row)"
    assert axes["x"]["scale"]["domain"] == [50, 350] and axes["y"]["scale"]["domain"] == [100, 400]
    assert axes["y"]["scale"]["reverse"] is True and "labelExpr" not in axes["x"]["axis"]
    assert spec["encoding"]["x2"]["field"] == "key_end" and spec["encoding"]["y2"]["field"] == "row_end"
    assert (spec["width"], spec["height"]) == (460, 460)
    assert tile_sizes(100, 400)[:2] == (460, 115)  # the longer side fixed, the other in proportion


def test_a_small_zoom_names_its_tokens_from_data_never_inside_an_expression():
    rows, keys = (N - 40, N), (N - 30, N)
    assert zoom_labelled(rows, keys) and not zoom_labelled((0, 65), (0, 10))
    spec = zoom_chart("small", rows, keys, TOKENS).to_dict(validate=False)
    axes = _axes(spec)
    params = {p["name"]: p["value"] for p in spec["params"]}
    for channel, (start, stop) in (("x", keys), ("y", rows)):
        axis = axes[channel]["axis"]
        assert axes[channel]["scale"]["domain"] == list(range(start, stop))
        assert _title(axes[channel]).startswith({"x": "key position", "y": "query position"}[channel])
        name = axis["labelExpr"].split("[")[0]
        assert axis["labelExpr"] == f"{name}[datum.value - {start}]"  # a name and a number only
        assert params[name] == TOKENS[start:stop]  # the labels themselves are the parameter's value
    text = json.dumps([a["axis"]["labelExpr"] for a in axes.values()])
    assert "if" not in text and "script" not in text and '\\"' not in text
    width, height, cell = tile_sizes(40, 30)
    assert cell >= 9 and (spec["width"], spec["height"]) == (width, height)  # room for a label per token
    frame = zoom_tokens(pd.DataFrame({"row": [N - 1], "key": [N - 3]}), TOKENS)
    assert frame["row_token"].tolist() == ["</script>"] and frame["key_token"].tolist() == ["if"]


def test_a_rows_strip_is_scaled_to_the_rows_max_and_names_its_top_keys(store):
    row = store.tile("self", 0, 1, [N - 1], slice(None))[0]
    row = row * 0.01 + 0.99 / N  # a diffuse row: every weight about 1/N
    bins = torch.nn.functional.adaptive_max_pool1d(row[None, None], 100)[0, 0]
    strip, named = row_strip_frames(row, bins, TOKENS)
    assert strip["relative"].max() == pytest.approx(1.0) and strip["relative"].min() > 0.5
    torch.testing.assert_close(torch.tensor(strip["weight"].to_numpy()), bins.double())
    best = row.topk(5)
    assert named["key"].tolist() == best.indices.tolist()
    assert named["token"].tolist() == [TOKENS[int(k)] for k in best.indices]
    assert named["relative"].tolist() == pytest.approx((best.values / row.max()).tolist())
    spec = row_strip_chart(strip, named, N, "Row").to_dict()
    bars, dots, labels = spec["layer"]
    y = bars["encoding"]["y"]
    assert y["field"] == "relative" and y["title"] == f"÷ row max ({float(row.max()):.3g})"
    assert labels["encoding"]["text"]["field"] == "token" and labels["mark"]["type"] == "text"
    assert dots["encoding"]["x"]["field"] == "key"
