"""The ablation sweep's maps wrap to the width they are given (each kind's map with its legend in view), and patching
maps set their position labels flat only where they fit the cell (else they overprint)."""
from __future__ import annotations

import pandas as pd

from transformer.charts import importance_chart, patching_heatmap

KINDS = ("encoder_self", "decoder_self", "cross")


def _sweep(heads: int, layers: int = 2) -> pd.DataFrame:
    return pd.DataFrame([{"kind": kind, "layer": layer, "head": head, "drop": 0.1 * head}
                         for kind in KINDS for layer in range(layers) for head in range(heads)])


def test_the_sweep_maps_wrap_to_the_column():
    spec = importance_chart(_sweep(4), max_width=760).to_dict()
    assert len(spec["concat"]) == 3 and spec["columns"] == 2  # two 4-head maps side by side, the third below
    assert importance_chart(_sweep(16, 12), max_width=760).to_dict()["columns"] == 1  # bart-large: one a row
    assert importance_chart(_sweep(4)).to_dict()["columns"] == 3  # no width given: one row


def _positions(tokens: list[str]) -> pd.DataFrame:
    return pd.DataFrame([{"site": "residual", "where": "encoder", "layer": layer, "head": -1, "position": p,
                          "token": token, "recovery": 0.5} for layer in range(3) for p, token in enumerate(tokens)])


def _label_angle(chart) -> float:
    return chart.to_dict()["encoding"]["x"]["axis"]["labelAngle"]


def test_patching_position_labels_lie_flat_only_where_they_fit():
    words = ["▁the", "▁old", "▁man", "▁sees", "▁a", "▁small", "▁dog", "</s>"]
    assert _label_angle(patching_heatmap(_positions(words))) != 0  # "0 ▁the" is wider than a 40-px cell
    assert _label_angle(patching_heatmap(_positions(["a", "b", "c"]))) == 0  # "0 a" fits
    heads = pd.DataFrame([{"site": "head", "where": "cross", "layer": layer, "head": head, "position": -1,
                           "token": "", "recovery": 0.5} for layer in range(2) for head in range(4)])
    assert _label_angle(patching_heatmap(heads)) == 0  # H1 … H4
