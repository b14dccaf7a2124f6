"""Composition heatmaps (charts.composition): one per type, the pairs that read each other that way and no others,
never wider than the page; a click gives the pair back."""
from __future__ import annotations

import pandas as pd
import pytest

from transformer.charts import (
    clicked_composition_pair,
    composition_heatmap,
    k_composition_heatmap,
    q_composition_heatmap,
    v_composition_heatmap,
)

FRAME = pd.DataFrame([{"from": "enc:L1H1", "to": "enc:L2H1", "q": 0.2, "k": 0.3, "v": 0.4},
                      {"from": "enc:L1H1", "to": "cross:L1H1", "q": float("nan"), "k": 0.5, "v": 0.1},
                      {"from": "dec:L1H1", "to": "cross:L1H1", "q": 0.7, "k": float("nan"), "v": float("nan")}])


@pytest.mark.parametrize(("chart", "pairs"), [(q_composition_heatmap, 2), (k_composition_heatmap, 2),
                                              (v_composition_heatmap, 2)])
def test_each_type_draws_the_pairs_it_has(chart, pairs):
    spec = chart(FRAME).to_dict()
    values = next(iter(spec["datasets"].values()))
    assert len(values) == pairs and spec["width"] <= 1100


def test_a_wide_model_stays_within_the_page_and_a_click_gives_the_pair():
    heads = [f"enc:L{i // 16 + 1}H{i % 16 + 1}" for i in range(576)]
    wide = pd.DataFrame({"from": heads, "to": heads[::-1], "q": 0.5, "k": 0.5, "v": 0.5})
    assert composition_heatmap(wide, "k").to_dict()["width"] <= 1100
    with pytest.raises(ValueError, match="one of q, k, v"):
        composition_heatmap(FRAME, "x")
    event = {"selection": {"composition_pair": [{"from": "enc:L1H1", "to": "cross:L1H1"}]}}
    assert clicked_composition_pair(event) == ("enc:L1H1", "cross:L1H1") and clicked_composition_pair(None) is None
