"""Circuit results for the chart and view tests: scores drawn at random on a graph's edges (the chart reads only the
graph, the scores and the curve), and a pair made from ids, for models whose greedy decode is too long to run."""
from __future__ import annotations

import dataclasses

import torch

from transformer.adapters import InspectableModel
from transformer.analysis.circuits import CircuitGraph, CircuitResult, EdgeScore, Faithfulness, Pair, pair_from_ids
from transformer.decode import InputError


def drawn_result(graph: CircuitGraph, seed: int = 0) -> CircuitResult:
    """A result on `graph` with random scores and a curve reaching 0.8 at a twentieth of the edges."""
    scores = torch.randn(graph.n_edges, generator=torch.Generator().manual_seed(seed)).tolist()
    edges = tuple(EdgeScore(u, graph.inputs[i].node, graph.inputs[i].input, s)
                  for (u, i), s in zip(graph.edges(), scores, strict=True))
    n = graph.n_edges
    curve = Faithfulness({0: 0.0, max(1, n // 100): 0.3, max(2, n // 20): 0.85, n: 1.0}, 0.8, max(2, n // 20), True)
    return CircuitResult("m", "eap-ig", 5, "logit-diff", graph, edges, curve, 2.0, -1.0, 1, 0, "a", "b", 0.1)


def ids_pair(adapter: InspectableModel, text: str) -> Pair:
    """`text` against the same ids with its second token replaced by its first (no greedy decode: a random model at
    a real shape decodes to its full length), read at the last decoder input (encoder-only: the last but one source
    token) against a token that is not the clean answer."""
    source = adapter.tokenize_source(text)
    ids = list(source.ids)
    changed = [ids[0], ids[0] if ids[0] != ids[1] else ids[2], *ids[2:]]
    src = torch.tensor([ids]), torch.tensor([changed])
    corrupted = dataclasses.replace(source, ids=tuple(changed))
    tgt = None if not adapter.family.decodes else (torch.tensor([adapter.decoder_prefix(source)]),
                                                   torch.tensor([adapter.decoder_prefix(corrupted)]))
    position = len(ids) - 2 if tgt is None else tgt[0].shape[1] - 1
    try:
        return pair_from_ids(adapter, src, tgt, position, contrast=7)
    except InputError:  # 7 is the clean answer
        return pair_from_ids(adapter, src, tgt, position, contrast=8)
