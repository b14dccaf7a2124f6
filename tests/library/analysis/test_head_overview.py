"""The head overview: one row per head with its statistics, and a small clickable layers x heads map at 24 x 16."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.helpers.chart_traces import random_trace
from transformer.analysis import STATISTICS, available_statistics, head_overview_frame
from transformer.charts import head_overview, selected_panel

SRC = [f"w{i}" for i in range(20)] + ["</s>"]
TGT = ["<s>"] + [f"v{i}" for i in range(18)]


@pytest.fixture(scope="module")
def bart_large_trace():
    """bart-large's shape: 12 encoder and 12 decoder layers of 16 heads (24 layers x 16 heads over both stacks)."""
    return random_trace(SRC, TGT, layers=12, heads=16, seed=1)


def test_one_row_per_head_of_every_kind(bart_large_trace):
    frame = head_overview_frame(bart_large_trace)
    assert len(frame) == 3 * 12 * 16
    assert set(frame["kind"]) == {"encoder_self", "decoder_self", "cross"}
    assert frame[["entropy", "max_weight", "diag_distance"]].notna().all().all()
    assert frame["alignment"].isna().all() and frame["drop"].isna().all()
    row = frame[(frame["kind"] == "cross") & (frame["layer"] == 2) & (frame["head"] == 5)].iloc[0]
    assert row["label"] == "L3H6"
    w = bart_large_trace.cross[2, 5].numpy()
    assert row["max_weight"] == pytest.approx(w.max(-1).mean(), rel=1e-5)


def test_statistics_passed_in_fill_their_columns(bart_large_trace):
    gold = list(range(len(TGT)))
    sweep = pd.DataFrame({"kind": ["cross", "encoder_self"], "layer": [0, 11], "head": [3, 15], "drop": [1.5, -0.2]})
    agreement = pd.DataFrame({"kind": ["cross", "cross"], "layer": [0, 0], "head": [3, -1], "spearman": [0.4, 0.9]})
    frame = head_overview_frame(bart_large_trace, gold=gold, sweep=sweep, agreement=agreement)
    cross = frame[frame["kind"] == "cross"]
    assert cross["alignment"].between(0, 1).all()
    assert frame[frame["kind"] == "encoder_self"]["alignment"].isna().all()
    assert frame.set_index(["kind", "layer", "head"]).loc[("cross", 0, 3), "drop"] == 1.5
    assert frame.set_index(["kind", "layer", "head"]).loc[("cross", 0, 3), "spearman"] == 0.4
    assert available_statistics(frame, "cross") == list(STATISTICS)
    assert "alignment" not in available_statistics(frame, "encoder_self")


def test_overview_map_is_one_small_chart_at_24_layers_by_16_heads():
    trace = random_trace(SRC[:6], TGT[:5], layers=24, heads=16, seed=2)
    frame = head_overview_frame(trace, ["cross"])
    chart = head_overview(frame, "entropy", "cross")
    spec = chart.to_dict()
    assert 14 <= spec["width"] / 16 <= 20 and spec["height"] / 24 == spec["width"] / 16
    assert spec["width"] <= 400 and spec["height"] <= 600
    data = next(iter(spec["datasets"].values()))
    assert len(data) == 24 * 16
    params = spec["params"]
    assert params[0]["name"] == "cell" and params[0]["select"]["fields"] == ["layer", "head"]
    assert "24 layers × 16 heads" in json.dumps(spec, ensure_ascii=False)
    # a click on the map opens the head through the grid's own reader
    assert selected_panel({"selection": {"cell": [{"layer": 23, "head": 15}]}}) == (23, 15)


@pytest.mark.parametrize("statistic", list(STATISTICS))
def test_every_statistic_draws_and_missing_values_are_grey(bart_large_trace, statistic):
    frame = head_overview_frame(bart_large_trace, ["encoder_self"])
    spec = head_overview(frame, statistic, "encoder_self").to_dict()
    assert spec["encoding"]["color"]["condition"]["value"] == "#d4d4d4"


def test_unknown_statistic_or_kind_is_refused(bart_large_trace):
    frame = head_overview_frame(bart_large_trace, ["cross"])
    with pytest.raises(ValueError, match="statistic"):
        head_overview(frame, "beauty", "cross")
    with pytest.raises(ValueError, match="no encoder_self"):
        head_overview(frame, "entropy", "encoder_self")
    assert np.isfinite(frame["entropy"]).all()
