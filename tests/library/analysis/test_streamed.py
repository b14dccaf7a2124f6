"""The streamed summaries of a store (one blocked pass) equal the same statistics computed on the dense maps."""
from __future__ import annotations

import pytest
import torch

from transformer.analysis.source.streamed import summarise, summarise_layer
from transformer.model import AttentionStore, ScoreRules, layer_store


def _store(rules: ScoreRules, q: int = 70, k: int = 70) -> AttentionStore:
    g = torch.Generator().manual_seed(3)
    queries, keys = torch.randn(4, q, 8, generator=g) * 2, torch.randn(2, k, 8, generator=g) * 2
    return AttentionStore({"self": (layer_store(queries, keys, rules, (0, 0, 1, 1)),)})


@pytest.mark.parametrize("rules", [ScoreRules(0.3, causal=True), ScoreRules(0.3, causal=True, window=9),
                                   ScoreRules(0.3)])
@pytest.mark.parametrize("pool", ["max", "mean"])
@pytest.mark.parametrize("n", [70, 64])  # bins of uneven sizes; bins that tile the blocks (pooled by reshaping)
def test_each_summary_equals_the_dense_computation(rules, pool, n):
    store = _store(rules, n, n)
    dense = store.dense("self")[0]  # (H, Q, K)
    s = summarise_layer(store, "self", 0, top_k=3, window=5, specials=[0, 7], resolution=16, pool=pool, block=16)
    torch.testing.assert_close(s.entropy, -torch.special.xlogy(dense, dense).sum(-1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(s.peak, dense.amax(-1))
    torch.testing.assert_close(s.first, dense[..., 0])
    torch.testing.assert_close(s.specials, dense[..., [0, 7]].sum(-1), atol=1e-6, rtol=1e-5)
    pos = torch.arange(n)
    near = (pos[:, None] - pos[None, :]).abs() < 5
    torch.testing.assert_close(s.local, (dense * near).sum(-1), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(s.column_sums, dense.sum(1), atol=1e-5, rtol=1e-5)
    top_w, top_i = dense.topk(3, dim=-1)
    torch.testing.assert_close(s.top_weights, top_w)  # (ties among zero weights may name other keys)
    torch.testing.assert_close(dense.gather(-1, s.top_keys), s.top_weights)  # the keys named carry those weights
    bins = torch.arange(n) // -(-n // 16)  # cells of ceil(n / 16): 15 of 5 rows for 70
    cells = int(bins[-1]) + 1
    expect = torch.zeros(4, cells, cells)
    for r in range(cells):
        for c in range(cells):
            block = dense[:, bins == r][:, :, bins == c]
            expect[:, r, c] = block.amax((-2, -1)) if pool == "max" else block.mean((-2, -1))
    torch.testing.assert_close(s.overview, expect, atol=1e-6, rtol=1e-5)


def test_every_layer_and_progress():
    store = _store(ScoreRules(0.3, causal=True), q=40, k=40)
    seen = []
    out = summarise(store, "self", block=16, progress=seen.append)
    assert len(out) == 1 and seen == [16 / 40, 32 / 40, 1.0]
    assert out[0].overview.shape == (4, 40, 40)
    with pytest.raises(ValueError, match="pool"):
        summarise_layer(store, "self", 0, pool="median")
