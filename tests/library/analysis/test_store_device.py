"""The store stays on the CPU while its tiles and the streamed summaries are computed on a named device (a GPU where
one is present) by the same code path: each result equals the store's own computation and comes back to the CPU."""
from __future__ import annotations

import pytest
import torch

from transformer.analysis import summarise_layer
from transformer.model import AttentionStore, RelativeBias, ScoreRules, layer_store, tile

CUDA_REASON = "no CUDA device on this machine: the GPU path runs where torch.cuda.is_available()"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason=CUDA_REASON))]
RULES = [
    ScoreRules(0.25, causal=True, window=7, offset=5),
    ScoreRules(0.25, causal=True, softcap=5.0, alibi=torch.tensor([0.5, 0.25, 0.125, 0.0625])),
    ScoreRules(0.25, keep=torch.arange(40) % 9 != 3, sinks=torch.tensor([0.0, 1.0, 2.0, -1.0])),
    ScoreRules(0.25, relative=RelativeBias(torch.randn(32, 4, generator=torch.Generator().manual_seed(2)), True, 128)),
]


def _store(rules: ScoreRules) -> AttentionStore:
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(4, 35, 8, generator=g) * 3, torch.randn(2, 40, 8, generator=g) * 3
    return AttentionStore({"self": (layer_store(q, k, rules, (0, 0, 1, 1)),)})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rules", RULES)
def test_tiles_on_a_device_equal_the_stores_own(device, rules):
    store = _store(rules)
    dense = store.dense("self")[0]
    for head, rows, keys in [(0, slice(None), slice(None)), (3, slice(9, 30), slice(4, 37)), (None, [0, 34], [1, 39])]:
        got = tile(store, "self", 0, head, rows, keys, device=device)
        assert got.device.type == "cpu"  # back where the store is
        want = dense.mean(0)[rows][:, keys] if head is None else dense[head][rows][:, keys]
        torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    torch.testing.assert_close(store.tile("self", 0, 1, device=device), dense[1], atol=1e-5, rtol=0)
    assert store.layer("self", 0).queries.device.type == "cpu"  # the store itself never moves


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rules", RULES[:2])
def test_summaries_on_a_device_equal_those_on_the_store(device, rules):
    store = _store(rules)
    here = summarise_layer(store, "self", 0, top_k=3, window=5, specials=[0, 7], resolution=16, block=16)
    seen: list[float] = []
    there = summarise_layer(store, "self", 0, top_k=3, window=5, specials=[0, 7], resolution=16, block=16,
                            device=device, progress=seen.append)
    assert seen[-1] == 1.0
    for name in ("entropy", "peak", "first", "specials", "local", "column_sums", "top_weights", "overview"):
        got = getattr(there, name)
        assert got.device.type == "cpu", name
        torch.testing.assert_close(got, getattr(here, name), atol=1e-5, rtol=1e-5, msg=name)
    dense = store.dense("self")[0]
    torch.testing.assert_close(dense.gather(-1, there.top_keys), there.top_weights, atol=1e-5, rtol=0)


def test_one_head_first_equals_its_share_of_every_head():
    store = _store(RULES[0])
    every = summarise_layer(store, "self", 0, top_k=3, resolution=16, block=16)
    for picked in ([2], [3, 0]):
        some = summarise_layer(store, "self", 0, top_k=3, resolution=16, block=16, heads=picked)
        for name in ("entropy", "peak", "local", "column_sums", "top_weights", "overview"):
            torch.testing.assert_close(getattr(some, name), getattr(every, name)[picked], msg=name)
    with pytest.raises(IndexError, match="heads 0-3"):
        summarise_layer(store, "self", 0, heads=[4])
