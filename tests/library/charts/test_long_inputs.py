"""Long inputs: maps fit a page width (cells shrink, then a key window), and attention sinks can be hidden."""
from __future__ import annotations

import json

import pytest
import torch

from tests.helpers.chart_traces import layer_data, random_trace
from tests.helpers.tiny_models import tiny_reverse_model
from transformer.adapters import adapter_for
from transformer.charts import attention_grid, attention_heatmap
from transformer.charts.window import MIN_MAP_CELL
from transformer.decode import greedy_decode, hidden_note, hide_tokens

LONG_SRC = [f"w{i}" for i in range(499)] + ["</s>"]
TGT = ["<s>", "a", "b", "c"]


@pytest.fixture(scope="module")
def long_trace():
    return random_trace(LONG_SRC, TGT, layers=1, heads=2)


def _width(chart) -> float:
    return chart.to_dict()["width"]


def test_500_token_cross_map_fits_1280_px_with_a_key_window(long_trace):
    chart = attention_heatmap(long_trace, "cross", 0, 1, max_width=1100)
    assert _width(chart) <= 1100
    data = layer_data(chart)
    assert data["key_index"].min() == 0 and data["key_index"].max() == 1100 // MIN_MAP_CELL - 1
    assert f"keys 1–{int(1100 // MIN_MAP_CELL)} of 500" in chart.to_dict()["title"]["text"]


def test_a_chosen_window_draws_those_keys_and_says_so(long_trace):
    chart = attention_heatmap(long_trace, "cross", 0, 0, keys=(100, 200), max_width=1100)
    spec = chart.to_dict()
    assert "keys 101–200 of 500" in spec["title"]["text"]
    data = layer_data(chart)
    assert set(data["key_index"]) == set(range(100, 200))
    assert spec["width"] <= 1100
    # the tooltip still names both tokens and their positions, counted from 1 as the panels and pickers count them
    fields = {t["field"] for t in spec["layer"][0]["encoding"]["tooltip"]}
    assert {"query_token", "key_token", "query_position", "key_position"} <= fields
    assert {"calculate": "datum.key_index + 1", "as": "key_position"} in spec["layer"][0]["transform"]
    row = data[(data.key_index == 150) & (data.query_index == 2)].iloc[0]
    assert (row.key_token, row.query_token) == ("w150", "b")


def test_short_inputs_keep_their_cells_and_title(long_trace):
    short = random_trace(["a", "b", "</s>"], TGT)
    chart = attention_heatmap(short, "cross", 0, 0, max_width=1100)
    plain = attention_heatmap(short, "cross", 0, 0)
    assert _width(chart) == _width(plain)
    assert "keys" not in chart.to_dict()["title"]["text"]


def test_window_outside_the_keys_is_refused(long_trace):
    with pytest.raises(ValueError, match="key window"):
        attention_heatmap(long_trace, "cross", 0, 0, keys=(450, 600))


def test_grid_draws_a_window_of_keys(long_trace):
    chart = attention_grid(long_trace, "cross", keys=(0, 50))
    spec = chart.to_dict()
    assert set(chart.data["key_index"]) == set(range(50))
    assert "keys 1–50 of 500" in spec["title"]["text"]


def test_hiding_sinks_renormalises_rows_and_is_said_and_exported():
    result = greedy_decode(adapter_for(*tiny_reverse_model(seed=0)), "abcdef", max_steps=5)
    trace = hide_tokens(result.trace)
    assert trace.hidden_source == (0, len(trace.source_tokens) - 1)  # the first letter and </s>
    assert trace.hidden_target == (0,)  # <s>
    assert torch.all(trace.cross[..., [0, -1]] == 0)
    assert torch.allclose(trace.cross.sum(-1), torch.ones(trace.cross.shape[:-1]), atol=1e-5)
    assert torch.allclose(trace.encoder_self.sum(-1), torch.ones(trace.encoder_self.shape[:-1]), atol=1e-5)
    rows = trace.decoder_self.sum(-1)  # the first decoder row only had <s>: it is left empty
    assert torch.all(rows[..., 0] == 0) and torch.allclose(rows[..., 1:], torch.ones_like(rows[..., 1:]), atol=1e-5)
    note = hidden_note(trace, "cross")
    assert "</s>" in note and "rows renormalised" in note
    spec = attention_heatmap(trace, "cross", 0, 0).to_dict()
    assert spec["title"]["subtitle"] == note
    data = layer_data(attention_heatmap(trace, "cross", 0, 0))
    assert set(data.loc[data.key_index == 0, "weight_text"]) == {"hidden"}
    assert data.loc[data.key_index == 0, "masked"].all()
    exported = json.loads(type(result)(**{**result.__dict__, "trace": trace}).to_json())
    assert exported["hidden_keys"] == {"source": [0, len(trace.source_tokens) - 1], "target": [0]}
    assert "hidden_keys" not in json.loads(result.to_json())
    assert hidden_note(result.trace) == ""


def test_hiding_only_specials_keeps_the_first_token():
    trace = hide_tokens(random_trace(["a", "b", "</s>"], TGT), first=False)
    assert trace.hidden_source == (2,) and trace.hidden_target == (0,)


def test_a_long_map_on_a_projector_keeps_its_rows_within_the_screens_height():
    """Presenter mode fits a map's rows to PRESENTED_ROWS_PX: past ~42 rows they are drawn lower than the cells are
    wide, so a 64-row map is as tall as a 42-row one, not 512 px; its 64 keys all drawn beside the side column (columns
    narrower than 8 px, not a window of keys); a short map keeps its square cells."""
    from ui.views.kit.map_fit import PRESENTED_KEY_CELL, PRESENTED_ROWS_PX, column_room, fits_column, map_fit

    tokens = [f"t{i}" for i in range(63)] + ["</s>"]
    long = random_trace(tokens, ["<s>", *tokens[:-1]], layers=1, heads=2)
    spec = attention_heatmap(long, "decoder_self", 0, 0, max_row=40, highlight_row=40,  # as Decode draws it
                             **map_fit(long, "decoder_self", 330, 900, presenting=True))
    spec_dict = spec.to_dict()
    assert spec_dict["height"] <= PRESENTED_ROWS_PX and "keys" not in spec_dict["title"]["text"]
    assert fits_column(long, "decoder_self", presenting=True)
    assert 64 * PRESENTED_KEY_CELL <= spec_dict["width"] <= column_room(long, "decoder_self", presenting=True)
    assert set(layer_data(spec)["key_index"]) == set(range(64))
    short = random_trace(tokens[:20], ["<s>", *tokens[:19]], layers=1, heads=2)
    fit = map_fit(short, "decoder_self", 330, 900, presenting=True)
    assert fit["row_height"] is None
    drawn = attention_heatmap(short, "decoder_self", 0, 0, **fit).to_dict()
    assert drawn["height"] == drawn["width"]  # 20 rows over 20 keys: square cells
