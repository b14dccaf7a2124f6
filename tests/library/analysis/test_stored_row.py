"""A long input's one-row views from the attention store (~1.3k tokens on tiny decoder-only models, above
STORE_ABOVE): Inside one head's recomputed q . k row, its softmax and each key's contribution equal the eager
head computation's; the logit lens at the decode steps (residuals kept at the steps' positions only) equals the
lens of the plain decode; the patching estimate at a step equals the whole-sequence estimate's sites there; a short
input's rows of grouped-query heads are the same through the maps and the store."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import SIZE, build, lines
from transformer.analysis import (
    HEADS,
    RESIDUAL_STREAM,
    HeadSelectionError,
    StepRuns,
    estimate_patching,
    every_step_lens,
    head_computation,
    head_row,
    prepare_patching,
)
from transformer.decode import STORE_ABOVE, greedy_decode
from transformer.store import open_model

TEXT = "\n".join(lines(32))  # ~1,300 tokens


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def adapter(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param) / request.param
    return open_model(str(build(request.param, folder, size={**SIZE, "positions": 2048})))


@pytest.fixture(scope="module")
def decoded(adapter):
    result = greedy_decode(adapter, TEXT, max_steps=3, residuals=True)
    assert result.trace.store is not None and len(result.trace.decoder_input_tokens) > STORE_ABOVE
    return result


def test_one_rows_scores_weights_and_contributions_equal_the_eager_head(adapter, decoded):
    store = decoded.trace.store
    fed = [*adapter.decoder_prefix(adapter.tokenize_source(TEXT)), *(s.token_id for s in decoded.steps[:-1])]
    insides = adapter.insides(torch.tensor([fed]), torch.tensor([fed]))
    n_rows = store.layer("self", 0).n_rows
    for layer, head, row in [(0, 0, n_rows - 1), (1, 3, n_rows - 2), (1, 1, 700)]:
        mine = head_row(store, "self", layer, head, row)
        eager = head_computation(adapter, insides, "self", layer, head, row)
        torch.testing.assert_close(mine.weights, eager.weights, atol=1e-5, rtol=0)
        torch.testing.assert_close(mine.weights, store.tile("self", layer, head, [row])[0], atol=1e-6, rtol=0)
        seen = eager.weights > 0
        torch.testing.assert_close(mine.scores[seen], eager.scores[seen], atol=1e-4, rtol=1e-5)
        torch.testing.assert_close(mine.dots, eager.dots, atol=1e-4, rtol=1e-5)
        torch.testing.assert_close(mine.contributions, eager.contributions, atol=1e-5, rtol=1e-4)
        assert float(mine.weights.sum()) == pytest.approx(1.0, abs=1e-5)
        assert mine.kv_head == eager.kv_head and mine.position == row
        assert mine.top(3)[0][0] == int(eager.weights.argmax())
    with pytest.raises(HeadSelectionError, match="no query row"):
        head_row(store, "self", 0, 0, n_rows)


def test_the_lens_at_the_decode_steps_equals_the_plain_decodes(adapter, decoded):
    plain = greedy_decode(adapter, TEXT, max_steps=3, residuals=True, keep="maps")
    assert [s.token_id for s in plain.steps] == [s.token_id for s in decoded.steps]
    assert decoded.residuals.decoder.shape == plain.residuals.decoder.shape  # one row per step and layer, no more
    torch.testing.assert_close(decoded.residuals.decoder, plain.residuals.decoder, atol=1e-4, rtol=1e-4)
    for mine, theirs in zip(every_step_lens(adapter, decoded), every_step_lens(adapter, plain), strict=True):
        assert [p.rank for p in mine.layers] == [p.rank for p in theirs.layers]
        for a, b in zip(mine.layers, theirs.layers, strict=True):
            assert a.prob == pytest.approx(b.prob, abs=1e-4) and a.kl == pytest.approx(b.kl, abs=1e-4)
        assert mine.layers[-1].prob == pytest.approx(decoded.steps[mine.step].prob, abs=1e-5)


def test_the_patching_estimate_at_a_step_equals_the_full_estimate(adapter, decoded):
    """Heads and residuals at the step's position: the step alone against the prefix's cache gives the gradient a
    whole-sequence backward gives (nothing earlier depends on the last position)."""
    edited = TEXT.replace(" man ", " dog ", 1)
    assert edited != TEXT
    setup = prepare_patching(adapter, TEXT, edited, step=1, output=[s.token_id for s in decoded.steps])
    full = estimate_patching(adapter, setup, (HEADS, RESIDUAL_STREAM)).frame
    last = setup.tgt[0].shape[1] - 1
    full = full[(full["site"] == HEADS) | (full["position"] == last)]
    mine = estimate_patching(adapter, StepRuns(tuple(setup.tgt[0][0].tolist()), tuple(setup.tgt[1][0].tolist()),
                                               setup.token))
    assert len(setup.tgt[0][0]) > STORE_ABOVE
    assert mine.clean_metric == pytest.approx(setup.clean_metric, abs=1e-4)
    assert mine.corrupted_metric == pytest.approx(setup.corrupted_metric, abs=1e-4)
    merged = full.merge(mine.frame, on=["site", "layer", "head"], suffixes=("_full", "_step"))
    assert len(merged) == len(mine.frame) == len(full)
    for a, b in zip(merged["estimate_full"], merged["estimate_step"], strict=True):
        assert b == pytest.approx(a, abs=1e-4, rel=1e-3)
    assert mine.head_grid().shape == adapter.head_counts()["self"]


def test_a_grouped_query_heads_row_is_the_same_through_the_maps_and_the_store(adapter):
    """A short input: the same decode kept as maps and as a store gives each head's row the same weights (1e-6) and
    the same key/value head (two query heads per group), and the store's q . k is the eager head computation's."""
    text = "\n".join(lines(2))
    maps, stored = (greedy_decode(adapter, text, max_steps=2, keep=keep) for keep in ("maps", "store"))
    assert [s.token_id for s in maps.steps] == [s.token_id for s in stored.steps]
    assert stored.trace.store is not None and maps.trace.store is None
    groups = adapter.head_groups()["self"]
    assert len(set(groups)) < len(groups)  # grouped-query attention
    store = stored.trace.store.layer("self", 0)
    fed = [*adapter.decoder_prefix(adapter.tokenize_source(text)), stored.steps[0].token_id]
    insides = adapter.insides(torch.tensor([fed]), torch.tensor([fed]))
    for layer, head, row in [(0, 0, store.n_rows - 1), (1, 1, store.n_rows - 1), (1, 3, 5)]:
        a = head_row(stored.trace, "self", layer, head, row)
        b = head_row(maps.trace, "self", layer, head, a.position)
        assert a.kv_head == b.kv_head == groups[head]
        torch.testing.assert_close(a.weights, b.weights, atol=1e-6, rtol=0)
        eager = head_computation(adapter, insides, "self", layer, head, a.position)
        assert eager.kv_head == a.kv_head
        torch.testing.assert_close(a.dots, eager.dots, atol=1e-5, rtol=1e-5)
