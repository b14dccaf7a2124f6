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


def test_every_head_label_shows_where_the_cells_can_carry_one():
    heads = [f"self:L{layer}H{h}" for layer in (1, 2) for h in range(1, 9)]  # 2 layers x 8 heads, at the page's width
    frame = pd.DataFrame([{"from": w, "to": r, "q": 0.5, "k": 0.5, "v": 0.5} for w in heads[:8] for r in heads[8:]])
    spec = composition_heatmap(frame, "k", max_width=500).to_dict()
    for axis in ("x", "y"):
        shown = spec["encoding"][axis]["axis"]
        assert shown["labelOverlap"] is False and "not every label" not in spec["encoding"][axis]["title"]
        assert shown["labelFontSize"] <= 11 and shown["labelFontSize"] < spec["width"] / 8
    assert spec["encoding"]["x"]["axis"]["labelAngle"] == -90  # a vertical label takes a cell's width only
    many = [f"enc:L{i // 16 + 1}H{i % 16 + 1}" for i in range(192)]
    dense = composition_heatmap(pd.DataFrame({"from": many, "to": many[::-1], "k": 0.5}).assign(q=0.5, v=0.5), "k",
                                max_width=500).to_dict()
    assert dense["encoding"]["x"]["axis"]["labelOverlap"] is True and "192 heads, not every label fits" in \
        dense["encoding"]["x"]["title"]


def test_the_colour_scale_is_fitted_to_the_maps_values():
    import pandas as pd

    frame = pd.DataFrame({"from": ["L1H1", "L1H2", "L1H1"], "to": ["L2H1", "L2H1", "L2H2"],
                          "q": [0.07, 0.09, 0.08], "k": [0.0, 0.0, 0.0], "v": [0.5, 0.2, 0.1]})
    q = composition_heatmap(frame, "q").to_dict()
    assert q["encoding"]["color"]["scale"]["domain"] == [0, 0.09]  # not a pale wash on 0-1
    assert composition_heatmap(frame, "k").to_dict()["encoding"]["color"]["scale"]["domain"] == [0, 1.0]
