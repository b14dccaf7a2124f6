"""Aggregates across heads and layers against hand computations on small matrices."""
from __future__ import annotations

import json

import pytest
import torch

from tests.helpers.chart_traces import layer_data, random_trace
from transformer.analysis import (
    aggregate_dict,
    aggregate_frame,
    aggregate_trace,
    cross_through_encoder,
    max_over_heads,
    rollout,
)
from transformer.charts import aggregate_heatmap
from transformer.decode import AttentionTrace

# two layers, two heads, two tokens
A1 = torch.tensor([[[1.0, 0.0], [0.5, 0.5]], [[0.0, 1.0], [0.5, 0.5]]])  # layer 1, heads 1 and 2
A2 = torch.tensor([[[0.2, 0.8], [1.0, 0.0]], [[0.6, 0.4], [0.0, 1.0]]])
ENC = torch.stack([A1, A2])  # (2, 2, 2, 2)


def test_max_over_heads_by_hand():
    assert torch.equal(max_over_heads(ENC)[0], torch.tensor([[1.0, 1.0], [0.5, 0.5]]))


def test_rollout_by_hand():
    # layer 1: mean [[.5,.5],[.5,.5]] -> 0.5 A + 0.5 I = [[.75,.25],[.25,.75]] (rows already sum to 1)
    r1 = torch.tensor([[0.75, 0.25], [0.25, 0.75]])
    # layer 2: mean [[.4,.6],[.5,.5]] -> [[.7,.3],[.25,.75]]
    r2 = torch.tensor([[0.7, 0.3], [0.25, 0.75]])
    out = rollout(ENC)
    assert torch.allclose(out[0], r1)
    assert torch.allclose(out[1], r2 @ r1)
    assert torch.allclose(out.sum(-1), torch.ones(2, 2))


def test_cross_attention_through_the_encoder_by_hand():
    cross = torch.tensor([[[[1.0, 0.0]], [[0.0, 1.0]]]])  # one decoder layer, 2 heads, 1 query, 2 source keys
    expected = torch.tensor([[0.5, 0.5]]) @ rollout(ENC)[-1]
    assert torch.allclose(cross_through_encoder(cross, ENC)[0], expected)


def test_aggregate_trace_charts_and_export():
    trace = random_trace(["a", "b", "c", "</s>"], ["<s>", "x", "y"], layers=3, heads=4)
    for how in ("mean", "max", "rollout"):
        agg = aggregate_trace(trace, how)
        assert agg.n_heads == 1 and agg.n_layers("cross") == 3
    roll = aggregate_trace(trace, "rollout")
    assert torch.allclose(roll.decoder_self.sum(-1), torch.ones(3, 1, 3), atol=1e-5)
    assert torch.all(roll.decoder_self[..., 0, 1:] == 0)  # still causal
    chart = aggregate_heatmap(trace, "cross", "rollout")
    assert chart.to_dict()["title"]["text"].startswith("Cross-attention · attention rollout · decoder layer 3")
    data = layer_data(chart)
    assert data["weight"].to_numpy() == pytest.approx(roll.cross[2, 0].flatten().numpy(), rel=1e-5)
    frame = aggregate_frame(trace, "max", "encoder_self")
    assert set(frame.columns) >= {"aggregate", "kind", "layer", "query_token", "key_token", "weight"}
    assert len(frame) == 3 * 4 * 4
    block = json.loads(json.dumps(aggregate_dict(trace, "rollout")))
    assert block["aggregate"] == "rollout" and len(block["cross"]) == 3 and len(block["cross"][0][0]) == 4


def test_unknown_aggregate_is_refused():
    trace = AttentionTrace(("a",), ("b",), torch.ones(1, 1, 1, 1), torch.ones(1, 1, 1, 1), torch.ones(1, 1, 1, 1))
    with pytest.raises(ValueError, match="aggregate"):
        aggregate_trace(trace, "median")
