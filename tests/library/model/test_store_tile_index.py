"""A store's tile at any positions (a run, scattered, unsorted, repeated) and any heads of grouped-query attention
equals the same cells of the whole maps."""
from __future__ import annotations

import pytest
import torch

from transformer.model import AttentionStore, ScoreRules, layer_store


@pytest.fixture(scope="module")
def store() -> AttentionStore:
    g = torch.Generator().manual_seed(11)
    queries, keys = torch.randn(6, 50, 8, generator=g), torch.randn(3, 50, 8, generator=g)
    return AttentionStore({"self": (layer_store(queries, keys, ScoreRules(0.4, causal=True), (2, 0, 1, 2, 0, 1)),)})


@pytest.mark.parametrize("rows", [slice(None), slice(10, 30), [49], [30, 3, 17, 17], [5, 6, 7]])
@pytest.mark.parametrize("keys", [slice(None), slice(0, 20), [0], [44, 2, 9, 9], [20, 21, 22, 23]])
def test_a_tile_is_the_dense_maps_cells(store, rows, keys):
    dense = store.dense("self")[0]
    r = torch.arange(50)[rows] if isinstance(rows, slice) else torch.tensor(rows)
    k = torch.arange(50)[keys] if isinstance(keys, slice) else torch.tensor(keys)
    for head in range(6):
        torch.testing.assert_close(store.tile("self", 0, head, rows, keys), dense[head][r][:, k], atol=1e-6, rtol=0)
    torch.testing.assert_close(store.tile("self", 0, None, rows, keys), dense.mean(0)[r][:, k], atol=1e-6, rtol=0)
