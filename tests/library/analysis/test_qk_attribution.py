"""A score taken apart (analysis.qk_attribution): per family and attention kind, at a query and key picked at random,
the pairs (query part, key part) plus the model's additive terms sum to the score the model computed, and the path's
W_Q / W_K give the captured queries and keys."""
from __future__ import annotations

import random

import pytest
import torch

from tests.helpers.our_models import _inputs
from tests.helpers.path_models import PATH_FAMILIES, path_model
from transformer.adapters import InspectableModel, ResidualPathError
from transformer.analysis import capture_path, qk_attribution, reading_parts
from transformer.model import Head


@pytest.fixture(scope="module", params=PATH_FAMILIES)
def adapter(request, tmp_path_factory) -> InspectableModel:
    return path_model(request.param, tmp_path_factory.mktemp(request.param))


def _capture(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    return capture_path(adapter, src, tgt if adapter.family.decodes else None)


def test_pairs_plus_terms_sum_to_the_models_score(adapter: InspectableModel, request):
    # seeded by the test's id (the adapter's name holds a temp path): the same cells on every run
    cap, rng = _capture(adapter), random.Random(request.node.callspec.id)
    for kind, (n_layers, n_heads) in adapter.head_counts().items():
        for layer in range(n_layers):
            inputs = cap.insides.inputs[kind][layer]
            head = rng.randrange(n_heads)
            query = rng.randrange(inputs.queries.shape[2])
            causal = kind in ("self", "decoder_self")
            key = rng.randrange(query + 1 if causal else inputs.keys.shape[2])
            table = qk_attribution(cap, Head(kind, layer, head), query, key)
            score = float(inputs.scores()[0, head, query, key])
            assert abs(table.score - score) <= 1e-4 * max(1.0, abs(score))
            assert abs(table.total - score) <= 1e-4 * max(1.0, abs(score)), (kind, layer)
            row = inputs.scores()[0, head, query, : key + 1 if causal else None]
            assert float(row.abs().max()) > 1e-3  # weights at a trained scale: real scores, not near-zero ones
            assert set(table.terms) == set(inputs.terms)  # the mask, T5's position bias: named entries


def test_the_table_lists_every_pair_largest_first(adapter: InspectableModel):
    cap = _capture(adapter)
    kind = adapter.family.cross_kind or adapter.family.kinds[0]
    table = qk_attribution(cap, Head(kind, 0, 0), 0, 0)
    pairs = table.pairs()
    assert len(pairs) == len(table.query_parts) * len(table.key_parts)
    sizes = [abs(c) for _, _, c in pairs]
    assert sizes == sorted(sizes, reverse=True)
    out = table.as_dict()
    assert set(out) >= {"score", "pairs", "terms"} and set(out["pairs"][0]) == {"query_part", "key_part",
                                                                                 "contribution"}
    if kind == "cross":  # the keys are the encoder's parts, the queries the decoder's
        assert any(k.startswith("enc:") for k in table.key_parts)
        assert not any(q.startswith("enc:") for q in table.query_parts)


def test_the_paths_projections_give_the_captured_queries_and_keys(adapter: InspectableModel):
    cap = _capture(adapter)
    for kind in adapter.family.kinds:
        inputs = cap.insides.inputs[kind][0]
        proj = cap.path.projections[kind][0]
        q_in = reading_parts(cap, kind, 0, [0]).total()[0]
        k_in = reading_parts(cap, kind, 0, [0], keys=True).total()[0]
        q = q_in @ proj.wq.detach().float().T + (0 if proj.bq is None else proj.bq.detach().float())
        k = k_in @ proj.wk.detach().float().T + (0 if proj.bk is None else proj.bk.detach().float())
        queries, keys = inputs.unrotated if inputs.unrotated is not None else (inputs.queries, inputs.keys)
        torch.testing.assert_close(q, queries[0, :, 0].flatten().float(), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(k, keys[0, :, 0].flatten().float(), atol=1e-4, rtol=1e-4)


def test_a_head_or_position_that_is_not_there_is_one_clear_line(adapter: InspectableModel):
    cap = _capture(adapter)
    kind = adapter.family.kinds[0]
    with pytest.raises(ResidualPathError, match="no head"):
        qk_attribution(cap, Head(kind, 0, 99), 0, 0)
    with pytest.raises(ResidualPathError, match="outside"):
        qk_attribution(cap, Head(kind, 0, 0), 999, 0)
