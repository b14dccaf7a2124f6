"""The circuit chart and its faithfulness curve draw (as SVG, at most a 1280-px page wide side by side) on the graph
of every shipped model and at GPT-2 small's and bart-large's shapes, with the top edges between the right nodes."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from transformer.adapters import MLP, ResidualPath, StackPath, Sublayer
from transformer.analysis.circuits import CircuitGraph, CircuitResult, EdgeScore, Faithfulness, build_graph
from transformer.charts import chart_to_svg, circuit_chart, faithfulness_chart, node_layout
from transformer.store import open_model

pytestmark = pytest.mark.slow
CHECKPOINTS = Path(__file__).resolve().parents[3] / "checkpoints"
SHIPPED = sorted(p.name for p in CHECKPOINTS.iterdir() if (p / "config.json").is_file())
PAGE_PX = 1280


def _result(graph: CircuitGraph, seed: int = 0) -> CircuitResult:
    """Scores drawn at random on `graph`'s edges (the chart reads only the graph, the scores and the curve)."""
    scores = torch.randn(graph.n_edges, generator=torch.Generator().manual_seed(seed)).tolist()
    edges = tuple(EdgeScore(u, graph.inputs[i].node, graph.inputs[i].input, s)
                  for (u, i), s in zip(graph.edges(), scores, strict=True))
    n = graph.n_edges
    curve = Faithfulness({0: 0.0, max(1, n // 100): 0.3, max(2, n // 20): 0.85, n: 1.0}, 0.8, max(2, n // 20), True)
    return CircuitResult("m", "eap-ig", 5, "logit-diff", graph, edges, curve, 2.0, -1.0, 1, 0, "a", "b", 0.1)


def _shape(kinds: dict[str, tuple[str, ...]], layers: dict[str, int], heads: int, kv: int | None = None
           ) -> CircuitGraph:
    stacks = {s: StackPath(None, None, tuple(tuple(Sublayer(k, None) for k in (*ks, MLP)) for _ in range(layers[s])),
                           None) for s, ks in kinds.items()}
    counts = {k: (layers[s], heads) for s, ks in kinds.items() for k in ks}
    groups = {k: tuple(h * (kv or heads) // heads for h in range(heads)) for k in counts}
    return build_graph(ResidualPath(True, stacks, {}), counts, groups, "decoder")


def _width(svg: str) -> float:
    return float(re.search(r'width="([\d.]+)"', svg)[1])  # type: ignore[index]


def _draws(result: CircuitResult, n: int) -> None:
    widths = [_width(chart_to_svg(c)) for c in (circuit_chart(result, n), faithfulness_chart(result, n))]
    assert sum(widths) <= PAGE_PX


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_models_circuit_draws(name: str):
    adapter = open_model(str(CHECKPOINTS / name))
    graph = build_graph(adapter.residual_path(), adapter.head_counts(), adapter.head_groups(),
                        adapter.family.output_stack)
    result = _result(graph)
    _draws(result, result.faithfulness.n)


@pytest.mark.parametrize("shape", ["gpt2", "bart-large"])
def test_real_shapes_draw_with_the_strongest_edges(shape: str):
    graph = (_shape({"decoder": ("self",)}, {"decoder": 12}, 12) if shape == "gpt2" else
             _shape({"encoder": ("encoder_self",), "decoder": ("decoder_self", "cross")},
                    {"encoder": 12, "decoder": 12}, 16))
    result = _result(graph)
    _draws(result, graph.n_edges)  # every edge asked: the strongest MAX_DRAWN drawn, the title says so
    assert "strongest" in str(circuit_chart(result, graph.n_edges).to_dict()["title"])


def test_edges_join_the_nodes_they_name_and_grouped_kv_edges_end_at_their_group():
    graph = _shape({"decoder": ("self",)}, {"decoder": 2}, 4, kv=2)
    nodes = node_layout(graph).set_index("node")
    assert nodes.loc["self:L2KV2", "x"] == nodes.loc["self:L2H3", "x"]
    assert nodes.loc["dec:emb", "y"] < nodes.loc["self:L1H1", "y"] < nodes.loc["self:L2.mlp", "y"] < nodes.loc[
        "logits", "y"]
    result = _result(graph)
    data = circuit_chart(result, 5).to_dict()
    drawn = next(d for d in data["datasets"].values() if d and "x2" in d[0])
    top = result.top(5)
    assert [(r["from"], r["to"], r["input"]) for r in drawn] == [(e.source, e.target, e.input) for e in top]
    first = drawn[0]
    assert (first["x"], first["y"]) == tuple(nodes.loc[first["from"], ["x", "y"]])
