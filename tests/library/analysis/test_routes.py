"""Information flow routes (analysis.routes): per family, what is added into every node (the residual, each head from
each key, the MLP, the biases) sums to the node's output and the importances to 1; on the shipped reversal model the
route of each step runs through a cross-attention head to the mirrored source position."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.our_models import _inputs
from tests.helpers.path_models import PATH_FAMILIES, path_model
from transformer.adapters import InspectableModel, ResidualPathError
from transformer.analysis import RouteGraph, capture_path, decode_parts, node_label, route_dict, step_route
from transformer.store import open_model


@pytest.fixture(scope="module", params=PATH_FAMILIES)
def adapter(request, tmp_path_factory) -> InspectableModel:
    return path_model(request.param, tmp_path_factory.mktemp(request.param))


def test_what_flows_into_each_node_sums_to_its_output(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    graph = RouteGraph(capture_path(adapter, src, tgt if adapter.family.decodes else None))
    for stack, streams in graph.cap.insides.residual.items():
        for depth in range(1, graph.last(stack) + 1):
            for i in range(streams[0].shape[1]):
                flow = graph.inflow((stack, depth, i))
                error = (flow.vectors.sum(0) - flow.output).norm() / flow.output.norm()
                assert error <= 1e-4, (stack, depth, i)
                assert float(flow.importance.sum()) == pytest.approx(1.0, abs=1e-5)
                assert (flow.importance >= 0).all() and flow.names[0] == "residual"
    assert torch.equal(graph.stream(stack)[-1], streams[-1][0].float())


def test_the_route_of_each_step_runs_through_cross_attention_to_the_mirrored_source():
    adapter = open_model("checkpoints/reverse")
    parts = decode_parts(adapter, "abcdefghij")
    assert "".join(parts.outputs[:-1]) == "jihgfedcba"  # the model reverses this input
    n, graph = len(parts.source_tokens) - 1, None  # the source ends in </s>
    for step in range(1, n + 1):
        found, graph = step_route(parts, step, graph=graph)
        cross = [e for e in found.edges if e.via.startswith("cross:")]
        best = max(cross, key=lambda e: e.importance)
        assert best.source == ("encoder", graph.last("encoder"), n - step), step
        assert best.target[0] == "decoder" and node_label(graph, best.source) == f"enc:L1@{n - step + 1}"
    out = route_dict(graph, found, parts, n)
    assert out["token"] == "a" and {"from", "to", "via", "importance"} == set(out["edges"][0])


def test_a_higher_threshold_keeps_fewer_edges_and_bad_values_are_refused():
    parts = decode_parts(open_model("checkpoints/reverse"), "abcdefghij")
    low, graph = step_route(parts, 2, threshold=0.01)
    high, _ = step_route(parts, 2, threshold=0.2, graph=graph)
    assert len(high.edges) < len(low.edges) and all(e.importance > 0.2 for e in high.edges)
    with pytest.raises(ResidualPathError, match="threshold"):
        step_route(parts, 2, threshold=1.5, graph=graph)
    with pytest.raises(ResidualPathError, match="step 99 does not exist"):
        step_route(parts, 99, graph=graph)
