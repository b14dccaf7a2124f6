"""A score taken apart into dictionary features (dictionaries.feature_qk): per family and attention kind, the
(query feature, key feature) pairs plus the error, bias and model terms sum to the score the model computed; the
features are the dictionary's active ones at each side; a missing or misfit dictionary is one line."""
from __future__ import annotations

import random

import pytest
import torch

from tests.helpers.dictionaries import random_dictionary
from tests.helpers.hf_causal_models import NEW_CAUSAL, WINDOW, build_new
from tests.helpers.our_models import _inputs
from tests.helpers.path_models import PATH_FAMILIES, _rescaled, path_model
from transformer.adapters import InspectableModel, store_of_insides
from transformer.analysis import capture_path
from transformer.decode import greedy_decode
from transformer.dictionaries import (
    DictionaryError,
    Site,
    feature_qk,
    feature_sources,
    needed_sites,
    place,
    store_feature_sources,
    text_feature_sources,
)
from transformer.model import Head
from transformer.store import open_model

TEXT = "a man in a blue shirt sees the dog and a woman in a red hat rides a bike down the long road to the sea"


def _check_every_kind(adapter: InspectableModel, cap, activation: str) -> None:
    rng = random.Random(adapter.name.rsplit("/", 1)[-1])  # the name holds a temp path: seed by its last part
    for kind, (n_layers, n_heads) in adapter.head_counts().items():
        layer, head = rng.randrange(n_layers), rng.randrange(n_heads)
        inputs = cap.insides.inputs[kind][layer]
        query = rng.randrange(inputs.queries.shape[2])
        key = rng.randrange(query + 1 if kind in ("self", "decoder_self") else inputs.keys.shape[2])
        sites = needed_sites(cap, Head(kind, layer, head))
        width = next(iter(cap.insides.residual.values()))[0].shape[-1]  # d_model, every stream
        dictionaries = [random_dictionary(s, width, 64, activation, seed=i) for i, s in enumerate(dict.fromkeys(sites))]
        table = feature_qk(cap, Head(kind, layer, head), query, key, dictionaries)
        # the table explains the score before a soft-cap (Gemma 2), as the plain QK table does; the softmax reads
        # cap * tanh(s / cap) + terms, which the table's softmax_input must give back
        before_cap = inputs.dot_products() * inputs.scale + sum(t.float() for t in inputs.terms.values())
        score = float(before_cap[0, head, query, key])
        assert abs(table.total - score) <= 1e-4 * max(1.0, abs(score)), (kind, layer)
        assert abs(table.score - score) <= 1e-4 * max(1.0, abs(score))
        read = float(inputs.scores()[0, head, query, key])
        assert abs(table.table.softmax_input - read) <= 1e-4 * max(1.0, abs(read)), (kind, layer)
        pairs = table.pairs()
        assert len(pairs) == len(table.query_features) * len(table.key_features) > 0
        assert {q for q, _, _ in pairs} == set(table.query_features)
        assert {"error×error", "bias×bias", "features×error", "error×features"} <= set(table.terms())
        assert set(inputs.terms) <= set(table.terms())  # the mask, T5's position bias: named as they are


@pytest.fixture(scope="module", params=PATH_FAMILIES)
def adapter(request, tmp_path_factory) -> InspectableModel:
    return path_model(request.param, tmp_path_factory.mktemp(request.param))


def test_feature_pairs_plus_terms_sum_to_the_models_score(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    cap = capture_path(adapter, src, tgt if adapter.family.decodes else None)
    _check_every_kind(adapter, cap, "topk" if "post" in adapter.name else "relu")


@pytest.mark.parametrize("family", NEW_CAUSAL)
def test_the_newer_families_too(family, tmp_path):
    adapter = _rescaled(open_model(str(build_new(family, tmp_path / family, window=WINDOW))))
    ids = torch.tensor([adapter.tokenize_source(TEXT).ids])
    _check_every_kind(adapter, capture_path(adapter, ids, ids), "jumprelu")


def test_a_dictionary_of_another_site_or_width_is_refused_in_one_line():
    adapter = path_model("ours-pre", None)  # type: ignore[arg-type]  # ours need no folder
    src, tgt = _inputs(adapter)
    cap = capture_path(adapter, src, tgt)
    head = Head("cross", 1, 0)
    assert [s.label for s in needed_sites(cap, head)] == ["resid:dec:L2", "resid:enc:out"]
    query_side = random_dictionary(Site.parse("resid:dec:L2"), 32, 16)
    with pytest.raises(DictionaryError, match="the key side of cross:L2H1 reads resid:enc:out"):
        feature_qk(cap, head, 0, 0, [query_side])
    with pytest.raises(DictionaryError, match="reads 16-wide"):
        feature_qk(cap, head, 0, 0, [query_side, random_dictionary(Site.parse("resid:enc:out"), 16, 16)])
    table = feature_qk(cap, head, 1, 2, [query_side, random_dictionary(Site.parse("resid:enc:out"), 32, 16)])
    out = table.as_dict()
    assert set(out) >= {"score", "pairs", "terms"} and set(out["pairs"][0]) == {"query_feature", "key_feature",
                                                                                 "contribution"}
    assert all(isinstance(v, float) for v in out["terms"].values())
    total = sum(p["contribution"] for p in out["pairs"]) + sum(out["terms"].values())
    assert abs(total - out["score"]) <= 1e-4 * max(1.0, abs(out["score"]))
    assert any(name.startswith("dec:L2H") for name in table.table.query_parts)  # the self-attention between: parts


@pytest.mark.parametrize("family", ["ours-pre", "ours-decoder-only-post", "ours-encoder-only-pre"])
def test_a_features_sources_over_heads_and_positions_sum_to_its_pre_activation(family: str):
    adapter = path_model(family, None)  # type: ignore[arg-type]  # ours need no folder
    src, tgt = _inputs(adapter)
    insides = adapter.insides(src, tgt if adapter.family.decodes else None)
    for kind in adapter.family.kinds:
        code = {"encoder_self": "enc", "decoder_self": "dec"}.get(kind, kind)
        where = place(Site.parse(f"attn:{code}:L2"), adapter)
        d = random_dictionary(where.site, where.width, 24)
        z = insides.inputs[kind][1].merged[0].float()
        pre = d.pre_activations(z)
        query = z.shape[0] - 1
        feature = int(pre[query].argmax())
        found = feature_sources(insides, where, d, feature, query)
        assert found.pre_activation == pytest.approx(float(pre[query, feature]), abs=1e-4)
        assert found.activation == pytest.approx(float(d.encode(z)[query, feature]), abs=1e-5) and found.activation > 0
        assert len(found.by_source()) == insides.inputs[kind][1].keys.shape[2] and len(found.by_head()) == 4
    with pytest.raises(DictionaryError, match="attention-output dictionaries"):
        feature_sources(insides, place(Site.parse("resid:L1" if not adapter.family.has_cross else "resid:enc:L1"),
                                       adapter), d, 0, 0)


@pytest.mark.parametrize("family", ["ours-pre", "ours-decoder-only-post", "ours-encoder-only-pre"])
def test_through_the_attention_stores_rows_a_features_sources_are_the_same(family: str):
    # long inputs: the query's row recomputed from the store (no n x n map), the values from the stream entering
    # the layer; on a short input both ways give the same shares, to the float's rounding
    adapter = path_model(family, None)  # type: ignore[arg-type]  # ours need no folder
    src, tgt = _inputs(adapter)
    insides = adapter.insides(src, tgt if adapter.family.decodes else None)
    store = store_of_insides(adapter, insides)
    for kind in (k for k in adapter.family.kinds if k != "cross"):
        code = {"encoder_self": "enc", "decoder_self": "dec"}.get(kind, kind)
        where = place(Site.parse(f"attn:{code}:L2"), adapter)
        d = random_dictionary(where.site, where.width, 24, seed=3)
        z = insides.inputs[kind][1].merged[0].float()
        query = z.shape[0] - 2
        feature = int(d.pre_activations(z)[query].argmax())
        plain = feature_sources(insides, where, d, feature, query)
        stream = insides.residual[where.stack][1][0]
        stored = store_feature_sources(adapter, store, stream, where, d, feature, query)
        assert torch.allclose(stored.contributions, plain.contributions, atol=1e-4), kind
        assert stored.activation == pytest.approx(plain.activation, abs=1e-4)
        assert stored.pre_activation == pytest.approx(plain.pre_activation, abs=1e-4)
    if adapter.family.has_cross:
        where = place(Site.parse("attn:cross:L2"), adapter)
        with pytest.raises(DictionaryError, match="first attention"):
            store_feature_sources(adapter, store, insides.residual["decoder"][1][0], where,
                                  random_dictionary(where.site, where.width, 8), 0, 0)


@pytest.mark.parametrize("family", ["ours-decoder-only-pre", "ours-decoder-only-post"])
def test_over_a_text_the_store_and_the_maps_name_the_same_sources_and_a_long_document_takes_the_store(
        family: str, monkeypatch):
    # one entry for any length: the store's fused forward (a document past the threshold) or the maps; on the same
    # text both give the feature's activation at every position, its strongest position and the shares alike
    from transformer.dictionaries import text_sources
    adapter = path_model(family, None)  # type: ignore[arg-type]  # ours need no folder
    where = place(Site.parse("attn:self:L2"), adapter)
    d = random_dictionary(where.site, where.width, 24, seed=5)
    text = "a b c d e a b c d e a b"
    maps = next(m for f in range(24) if (m := text_feature_sources(adapter, d, text, f)).activations.max() > 0)
    feature = maps.sources.feature  # one that fires on the text
    assert not maps.stored and maps.sources.query == int(maps.activations.argmax())
    monkeypatch.setattr(text_sources, "STORE_ABOVE", 4)  # "auto" now keeps the store, as past 1,024 tokens
    stored = text_feature_sources(adapter, d, text, feature)
    assert stored.stored and stored.tokens == maps.tokens and stored.sources.query == maps.sources.query
    torch.testing.assert_close(stored.activations, maps.activations, atol=1e-4, rtol=0)
    torch.testing.assert_close(stored.sources.contributions, maps.sources.contributions, atol=1e-4, rtol=0)
    assert sum(stored.sources.by_source()) + stored.sources.constant == pytest.approx(
        stored.sources.pre_activation, abs=1e-4)
    # a decode's own steps read after the prompt (a document view's rows past the prompt): both ways alike too
    steps = [s.token_id for s in greedy_decode(adapter, text, max_steps=4).steps[:-1]]
    on_maps = text_feature_sources(adapter, d, text, feature, keep="maps", continuation=steps)
    on_store = text_feature_sources(adapter, d, text, feature, keep="store", continuation=steps)
    assert not on_maps.stored and on_store.stored and len(on_store.tokens) == len(maps.tokens) + len(steps)
    torch.testing.assert_close(on_store.activations, on_maps.activations, atol=1e-4, rtol=0)
    torch.testing.assert_close(on_store.sources.contributions, on_maps.sources.contributions, atol=1e-4, rtol=0)
    # a feature that never fires on the text: its sources where its pre-activation is largest (what the page says)
    silent = next(m for f in range(24) if (m := text_feature_sources(adapter, d, text, f)).activations.max() == 0)
    others = [text_feature_sources(adapter, d, text, silent.sources.feature, query=q).sources.pre_activation
              for q in range(len(silent.tokens))]
    assert silent.sources.activation == 0 and silent.sources.pre_activation == pytest.approx(max(others), abs=1e-5)


def test_over_a_text_a_decoder_side_attention_of_an_encoder_decoder_is_refused_in_one_line():
    adapter = path_model("ours-pre", None)  # type: ignore[arg-type]
    where = place(Site.parse("attn:cross:L1"), adapter)
    with pytest.raises(DictionaryError, match="^which sources wrote a feature is shown .* not attn:cross:L1$"):
        text_feature_sources(adapter, random_dictionary(where.site, where.width, 8), "a b c", 0)
