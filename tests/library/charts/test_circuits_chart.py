"""The circuit chart draws its top edges between the right nodes, a grouped key/value edge at its group (the view at
every shipped model and at real shapes: tests/app/pages/test_app_circuits_sizes.py)."""
from __future__ import annotations

import pytest

from tests.helpers.circuit_results import drawn_result
from transformer.adapters import MLP, ResidualPath, StackPath, Sublayer
from transformer.analysis.circuits import CircuitGraph, build_graph
from transformer.charts import circuit_chart, node_layout

pytestmark = pytest.mark.slow


def _shape(kinds: dict[str, tuple[str, ...]], layers: dict[str, int], heads: int, kv: int | None = None
           ) -> CircuitGraph:
    stacks = {s: StackPath(None, None, tuple(tuple(Sublayer(k, None) for k in (*ks, MLP)) for _ in range(layers[s])),
                           None) for s, ks in kinds.items()}
    counts = {k: (layers[s], heads) for s, ks in kinds.items() for k in ks}
    groups = {k: tuple(h * (kv or heads) // heads for h in range(heads)) for k in counts}
    return build_graph(ResidualPath(True, stacks, {}), counts, groups, "decoder")


def test_edges_join_the_nodes_they_name_and_grouped_kv_edges_end_at_their_group():
    graph = _shape({"decoder": ("self",)}, {"decoder": 2}, 4, kv=2)
    nodes = node_layout(graph).set_index("node")
    assert nodes.loc["self:L2KV2", "x"] == nodes.loc["self:L2H3", "x"]
    assert nodes.loc["dec:emb", "y"] < nodes.loc["self:L1H1", "y"] < nodes.loc["self:L2.mlp", "y"] < nodes.loc[
        "logits", "y"]
    result = drawn_result(graph)
    data = circuit_chart(result, 5).to_dict()
    drawn = next(d for d in data["datasets"].values() if d and "x2" in d[0])
    top = result.top(5)
    assert [(r["from"], r["to"], r["input"]) for r in drawn] == [(e.source, e.target, e.input) for e in top]
    first = drawn[0]
    assert (first["x"], first["y"]) == tuple(nodes.loc[first["from"], ["x", "y"]])
