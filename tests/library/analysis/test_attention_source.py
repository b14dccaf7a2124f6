"""One analysis at every length: each analysis read through the captured maps and through the attention store of
the same input gives the same numbers (1e-6); whole-map features are refused in one place for a store."""
from __future__ import annotations

import importlib

import pytest
import torch

from transformer.analysis import (
    MapsNeeded,
    MapsSource,
    StoreSource,
    attention_source,
    bin_starts,
    head_row,
    head_stats,
    pool_row,
    pool_tile,
    refused_features,
    stats_frame,
    summarise_layer,
    whole_maps,
)
from transformer.model import AttentionStore, ScoreRules, layer_store, value_norms

ATOL = 1e-6
SOURCE_MODULE = importlib.import_module("transformer.analysis.source.attention_source")  # its limit, patched


def _store(rules: ScoreRules, n: int = 70, layers: int = 2) -> AttentionStore:
    g = torch.Generator().manual_seed(5)
    out = []
    for _ in range(layers):
        queries, keys = torch.randn(4, n, 8, generator=g) * 2, torch.randn(2, n, 8, generator=g) * 2
        norms = value_norms(torch.randn(2, n, 8, generator=g), (0, 0, 1, 1), torch.randn(16, 32, generator=g))
        out.append(layer_store(queries, keys, rules, (0, 0, 1, 1), norms))
    return AttentionStore({"self": tuple(out)})


def _both(rules: ScoreRules, n: int = 70) -> tuple[StoreSource, MapsSource]:
    store = _store(rules, n)
    norms = torch.stack([one.value_norms for one in store.layers["self"]])
    causal = frozenset({"self"}) if rules.causal else frozenset()
    return StoreSource(store), MapsSource({"self": store.dense("self")}, causal, {"self": norms},
                                          {"self": (0, 0, 1, 1)})


RULES = [ScoreRules(0.3, causal=True), ScoreRules(0.3, causal=True, window=9), ScoreRules(0.3)]


@pytest.mark.parametrize("rules", RULES)
def test_tiles_and_rows_are_the_same_through_both_backings(rules):
    stored, maps = _both(rules)
    for head in (0, 3, None):
        torch.testing.assert_close(stored.tile("self", 1, head, slice(10, 40), [3, 9, 60]),
                                   maps.tile("self", 1, head, slice(10, 40), [3, 9, 60]), atol=ATOL, rtol=0)
    a, b = head_row(stored, "self", 1, 2, 50), head_row(maps, "self", 1, 2, 50)
    torch.testing.assert_close(a.weights, b.weights, atol=ATOL, rtol=0)
    torch.testing.assert_close(a.contributions, b.contributions, atol=1e-5, rtol=1e-6)
    assert [k for k, _, _ in a.top(5)] == [k for k, _, _ in b.top(5)]
    assert a.dots is not None and b.dots is None  # q . k only where the store keeps the queries and keys
    assert a.kv_head == b.kv_head == 1  # grouped queries: heads 2 and 3 read key/value head 1 through both


@pytest.mark.parametrize("rules", RULES)
def test_the_summaries_are_the_same_through_both_backings(rules):
    stored, maps = _both(rules)
    for block in (16, 512):  # several blocks; one block (a short input)
        a = summarise_layer(stored, "self", 0, top_k=3, window=5, specials=[0, 7], resolution=16, block=block,
                            with_mean=True)
        b = summarise_layer(maps, "self", 0, top_k=3, window=5, specials=[0, 7], resolution=16, block=16,
                            with_mean=True)
        for name in ("entropy", "peak", "first", "specials", "local", "column_sums", "distance", "overview",
                     "top_weights"):
            torch.testing.assert_close(getattr(a, name), getattr(b, name), atol=5 * ATOL, rtol=1e-6)


def test_head_statistics_are_the_definition_through_both_backings():
    stored, maps = _both(ScoreRules(0.3, causal=True))
    dense = maps.maps["self"]
    a, b = head_stats(stored, "self"), head_stats(maps, "self")
    assert list(a.columns) == ["layer", "head", "entropy", "max_weight", "diag_distance"]
    for column in ("entropy", "max_weight", "diag_distance"):
        assert a[column].to_numpy() == pytest.approx(b[column].to_numpy(), abs=5 * ATOL)
    w = torch.cat([dense, dense.mean(1, keepdim=True)], 1)  # (L, H + 1, Q, K): head -1 is the mean map
    pos = torch.arange(w.shape[-1]).float()
    want_entropy = -torch.special.xlogy(w, w).sum(-1).mean(-1).reshape(-1)
    want_distance = (w * (pos[None, :] - pos[:, None]).abs()).sum(-1).mean(-1).reshape(-1)
    assert a["entropy"].to_numpy() == pytest.approx(want_entropy.numpy(), abs=1e-5)
    assert a["max_weight"].to_numpy() == pytest.approx(w.amax(-1).mean(-1).reshape(-1).numpy(), abs=1e-6)
    assert a["diag_distance"].to_numpy() == pytest.approx(want_distance.numpy(), rel=1e-5)
    assert a["head"].tolist() == [0, 1, 2, 3, -1] * 2


def test_a_cross_kinds_diagonal_is_scaled():
    w = torch.zeros(1, 1, 3, 5)
    w[0, 0, torch.arange(3), torch.tensor([0, 2, 4])] = 1.0  # a monotonic alignment, 3 queries over 5 keys
    frame = head_stats(MapsSource({"cross": w}), "cross")
    assert frame["diag_distance"].tolist() == pytest.approx([0.0, 0.0])
    assert frame["max_weight"].tolist() == pytest.approx([1.0, 1.0])


def test_the_document_table_reads_the_same_summaries():
    stored, _ = _both(ScoreRules(0.3, causal=True))
    s = summarise_layer(stored, "self", 1, window=4)
    frame = stats_frame([s])
    assert frame["first"].tolist() == pytest.approx(s.first.mean(-1).tolist())
    assert frame["local"].tolist() == pytest.approx(s.local.mean(-1).tolist())


def test_a_store_refuses_whole_map_features_in_one_place(monkeypatch):
    stored, maps = _both(ScoreRules(0.3, causal=True))
    assert whole_maps(maps, "rollout", "self") is maps.maps["self"]
    assert refused_features(maps) == ()
    torch.testing.assert_close(whole_maps(stored, "rollout", "self"), maps.maps["self"])  # small: materialised
    monkeypatch.setattr(SOURCE_MODULE, "WHOLE_MAPS_BYTES", 1000)
    with pytest.raises(MapsNeeded, match="Attention rollout .* 70 tokens .* open a window"):
        whole_maps(stored, "rollout", "self")
    assert "the line view" in refused_features(stored)
    with pytest.raises(KeyError, match="unknown whole-map feature"):
        whole_maps(maps, "heatmap", "self")


def test_a_store_or_a_source_reads_as_a_source():
    store = _store(ScoreRules(0.3, causal=True), n=12)
    assert isinstance(attention_source(store), StoreSource)
    stored = StoreSource(store)
    assert attention_source(stored) is stored


def test_pooling_a_row_and_a_tile():
    row = torch.rand(1300)
    bins = pool_row(row)
    assert bins.shape == (512,) and float(bins.max()) == float(row.max())
    assert bins[0] == row[: -(-1300 // 512)].max()  # adaptive: bin 0 covers keys 0..ceil(K / B)
    assert pool_row(row[:100]).shape == (100,)  # fewer keys than bins: the row itself
    diff = torch.randn(3, 1000)
    torch.testing.assert_close(pool_row(diff, 10, how="mean"), diff.view(3, 10, 100).mean(-1))
    assert bin_starts(1300, 4) == [0, 325, 650, 975]
    w = torch.rand(2, 600, 300)
    cells, rb, kb = pool_tile(w, 256)
    assert (rb, kb) == (3, 2) and cells.shape == (2, 200, 150)
    assert float(cells[1, 5, 7]) == float(w[1, 15:18, 14:16].max())
    same, rb, kb = pool_tile(w[:, :100, :100], 256)
    assert same is not None and (rb, kb) == (1, 1) and torch.equal(same, w[:, :100, :100])
    with pytest.raises(ValueError, match="how"):
        pool_row(row, how="median")


def test_a_short_trace_reads_through_its_maps():
    from tests.helpers.chart_traces import random_trace

    trace = random_trace(["a", "b", "c"], ["x", "y"], layers=2, heads=3, seed=4)
    source = attention_source(trace)
    assert isinstance(source, MapsSource) and source.holds_maps
    assert source.causal == frozenset({"decoder_self"}) and source.shape("cross") == trace.shape("cross")
    torch.testing.assert_close(source.tile("cross", 1, 2), trace.matrix("cross", 1, 2))
    torch.testing.assert_close(source.tile("cross", 1, None), trace.matrix("cross", 1))


def test_every_whole_map_feature_asks_the_one_check(monkeypatch):
    """Rollout, the mean and max of heads, the line view, the model-view grid and the animation read whole maps:
    past what a store may materialise each is refused by the one check, naming itself."""
    from tests.helpers.chart_traces import random_trace
    from transformer.analysis import aggregate_trace
    from transformer.charts import attention_panels, line_frame
    from transformer.decode import AttentionTrace

    store = _store(ScoreRules(0.3, causal=True), n=12)
    tokens = tuple(f"t{i}" for i in range(12))
    trace = AttentionTrace((), tokens, family="decoder-only", store=store)
    short = random_trace(["a", "b"], ["x", "y"])
    assert aggregate_trace(short, "rollout").shape("cross")[1] == 1  # maps held: drawn as before
    assert aggregate_trace(trace, "rollout").shape("self") == (2, 1, 12, 12)  # a small store: materialised
    monkeypatch.setattr(SOURCE_MODULE, "WHOLE_MAPS_BYTES", 1000)
    for call, name in ((lambda: aggregate_trace(trace, "rollout"), "Attention rollout"),
                       (lambda: aggregate_trace(trace, "max"), "The mean or max"),
                       (lambda: line_frame(trace, "self", 0, [0]), "The line view"),
                       (lambda: attention_panels(trace, "self"), "The model-view grid")):
        with pytest.raises(MapsNeeded, match=name):
            call()
    assert len(line_frame(short, "cross", 0, [0])) > 0
