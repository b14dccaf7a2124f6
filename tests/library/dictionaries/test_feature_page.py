"""A feature's page: its strongest examples and deciles over a corpus's activations, the finder's frame, the tokens
its direction promotes through the model's own output head, the heads that read its direction, and the charts of a
feature score and a feature's sources."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.dictionaries import random_dictionary
from tests.helpers.our_models import _inputs, _ours
from transformer.analysis import capture_path
from transformer.charts import decile_chart, feature_pairs_chart, feature_pairs_frame, feature_sources_chart
from transformer.dictionaries import (
    Site,
    decile_counts,
    decile_examples,
    encoded,
    feature_frame,
    feature_qk,
    feature_sources,
    place,
    promoted_tokens,
    reading_heads,
    site_activations,
    top_examples,
)
from transformer.model import Head

TEXTS = ["abcdef", "fedcba", "aabbcc", "cabbage", "decade"]


@pytest.fixture(scope="module")
def causal():
    return _ours("ours-decoder-only-pre")


def test_examples_deciles_and_the_finder_read_the_same_activations(causal):
    where = place(Site.parse("resid:L2"), causal)
    d = random_dictionary(where.site, where.width, 12)
    acts = site_activations(causal, where, TEXTS)
    assert sorted(set(acts.texts)) == list(range(len(TEXTS))) and len(acts) == len(acts.tokens)
    codes = encoded(d, acts)
    torch.testing.assert_close(codes, d.encode(acts.values))
    feature = int(codes.sum(0).argmax())
    tops = top_examples(codes, acts, feature, 5)
    assert [e.activation for e in tops] == sorted((e.activation for e in tops), reverse=True)
    assert tops[0].activation == pytest.approx(float(codes[:, feature].max()))
    first = tops[0]
    assert first.token == acts.tokens[next(i for i in range(len(acts)) if (acts.texts[i], acts.positions[i]) ==
                                          (first.text, first.position))]
    counts = decile_counts(codes, feature)
    assert sum(counts.values()) == int((codes[:, feature] > 0).sum()) and counts[9] >= 1
    by_decile = decile_examples(codes, acts, feature)
    assert 9 in by_decile and all(len(v) <= 3 for v in by_decile.values())
    frame = feature_frame(d, codes, acts)
    assert list(frame["feature"]) == list(range(12))
    assert frame.loc[feature, "frequency"] == pytest.approx(float((codes[:, feature] > 0).float().mean()))
    assert frame.loc[feature, "max_activation"] == pytest.approx(first.activation)
    assert decile_chart(counts, feature).to_dict()["mark"]["type"] == "bar"


def test_promoted_tokens_are_the_output_heads_own_rise(causal):
    where = place(Site.parse("resid:L3"), causal)
    d = random_dictionary(where.site, where.width, 6)
    found = promoted_tokens(causal, where, d, 2, 4)
    with torch.no_grad():
        rise = causal.output_head(d.b_dec + d.w_dec[2]) - causal.output_head(d.b_dec)
    assert [t for t, _ in found] == [causal.id_to_token(int(i)) for i in rise.topk(4).indices]
    assert [v for _, v in found] == pytest.approx(rise.topk(4).values.tolist(), abs=1e-5)
    encoder = _ours("ours-pre")
    enc_where = place(Site.parse("resid:enc:L1"), encoder)
    assert promoted_tokens(encoder, enc_where, random_dictionary(enc_where.site, 32, 4), 0) is None


def test_reading_heads_are_the_later_heads_of_the_stream_with_their_projection_norms():
    post = _ours("ours-decoder-only-post")  # post-norm: the heads read the stream through no norm of their own
    where = place(Site.parse("resid:L2"), post)
    d = random_dictionary(where.site, where.width, 4)
    frame = reading_heads(post, where, d, 1)
    assert set(frame["head"]) == {f"self:L{layer}H{h}" for layer in (2, 3) for h in range(1, 5)}
    proj = post.residual_path().projections["self"][1]
    row = frame.set_index("head").loc["self:L2H3"]
    assert row["query"] == pytest.approx(float((proj.wq.detach()[16:24] @ d.w_dec[1]).norm()), rel=1e-5)
    assert row["key"] == pytest.approx(float((proj.wk.detach()[16:24] @ d.w_dec[1]).norm()), rel=1e-5)
    assert list(frame[["query", "key"]].max(axis=1)) == sorted(frame[["query", "key"]].max(axis=1), reverse=True)


def test_the_charts_of_a_feature_score_and_a_features_sources(causal):
    src, tgt = _inputs(causal)
    cap = capture_path(causal, src, tgt)
    d = random_dictionary(Site.parse("resid:L2"), 32, 16)
    table = feature_qk(cap, Head("self", 1, 0), 3, 1, [d])
    frame = feature_pairs_frame(table, top=3)
    assert frame["contribution"].sum() == pytest.approx(table.score, abs=1e-4)  # every pair and term is a row
    assert list(frame["what"][:3]) == ["pair"] * 3 and feature_pairs_chart(table).to_dict()["mark"]["type"] == "bar"
    where = place(Site.parse("attn:self:L2"), causal)
    insides = causal.insides(src, tgt)
    z = random_dictionary(where.site, where.width, 8)
    sources = feature_sources(insides, where, z, 0, 2)
    tokens = [f"t{i}" for i in range(len(sources.by_source()))]
    spec = feature_sources_chart(sources, tokens).to_dict()
    assert spec["layer"][0]["mark"]["type"] == "rect"
    with pytest.raises(ValueError, match="token labels"):
        feature_sources_chart(sources, tokens[:-1])
