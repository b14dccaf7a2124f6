"""The attention store recomputes every weight the model computed: per family, each tile of each head recomputed from
the stored queries, keys, log-sum-exps and rules equals the eager weights (to 1e-5), sliding windows shorter than the
input included; rules the store cannot reproduce are refused."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from tests.helpers.hf_causal_models import CAUSAL, lines
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_masked_models import MASKED
from tests.helpers.hf_masked_models import build as build_masked
from tests.helpers.hf_tiny_models import FAMILIES, MORE_FAMILIES
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.our_models import OURS, _inputs, _ours
from transformer.adapters import attention_store, store_of_insides
from transformer.adapters.store_capture import layer_of
from transformer.model import AttentionInputs, AttentionStore, ScoreRules, StoreError, layer_store, row_lse, tile
from transformer.store import open_model

LONG = " ".join(lines(12))  # a few hundred tokens for the families whose positions reach that far
LONG_FAMILIES = (*CAUSAL, *MASKED, "t5", "mt5")


@pytest.fixture(scope="module", params=[*OURS, *FAMILIES, *MORE_FAMILIES, *CAUSAL, *MASKED])
def adapter(request, tmp_path_factory):
    family = request.param
    if family in OURS:
        return _ours(family)
    build = build_causal if family in CAUSAL else build_masked if family in MASKED else build_seq2seq
    return open_model(str(build(family, tmp_path_factory.mktemp(family) / family)))


def _assert_tiles_equal_eager(adapter, src, tgt) -> AttentionStore:
    insides = adapter.insides(src, tgt)
    store = store_of_insides(adapter, insides)
    assert set(store.kinds) == set(adapter.family.kinds)
    for kind, (n_layers, n_heads) in adapter.head_counts().items():
        assert store.shape(kind)[:2] == (n_layers, n_heads)
        for layer in range(n_layers):
            eager = insides.attentions[kind][layer][0].float()  # (H, Q, K)
            q, k = eager.shape[1:]
            for head in range(n_heads):
                torch.testing.assert_close(tile(store, kind, layer, head), eager[head], atol=1e-5, rtol=0)
                rows, keys = slice(q // 3, q), slice(k // 4, k // 2 + 1)  # a tile inside the map
                torch.testing.assert_close(store.tile(kind, layer, head, rows, keys), eager[head][rows, keys],
                                           atol=1e-5, rtol=0)
            torch.testing.assert_close(store.tile(kind, layer, None), eager.mean(0), atol=1e-5, rtol=0)
            eager_lse = insides.inputs[kind][layer].scores()[0].logsumexp(-1)
            torch.testing.assert_close(store.layer(kind, layer).lse, eager_lse, atol=1e-5, rtol=1e-6)
    return store


def test_every_tile_recomputed_from_the_store_is_the_eager_weight(adapter):
    _assert_tiles_equal_eager(adapter, *_inputs(adapter))


def test_every_tile_is_exact_on_a_few_hundred_tokens(adapter):
    name = getattr(getattr(getattr(adapter, "model", None), "config", None), "model_type", "")
    if name not in LONG_FAMILIES:
        pytest.skip(f"{adapter.name}'s positions stop before a few hundred tokens (its short input is checked)")
    src, tgt = _inputs(adapter, LONG)
    assert max(src.shape[1], tgt.shape[1]) >= 150
    _assert_tiles_equal_eager(adapter, src, tgt)


def test_value_norms_are_each_heads_share_of_the_output_projection(adapter):
    src, tgt = _inputs(adapter)
    insides = adapter.insides(src, tgt)
    store = store_of_insides(adapter, insides)
    kind = adapter.family.output_kind
    inputs = insides.inputs[kind][0]
    weight = adapter.output_projection(kind, 0)[0]
    dv = inputs.values.shape[-1]
    head = inputs.n_heads - 1
    with torch.no_grad():
        direct = inputs.head_values()[0, head].float() @ weight[:, head * dv:(head + 1) * dv].float().t()
    torch.testing.assert_close(store.layer(kind, 0).value_norms[head], direct.norm(dim=-1), atol=1e-5, rtol=1e-5)


def test_the_store_is_smaller_than_the_maps_on_long_inputs(adapter):
    src, tgt = _inputs(adapter)
    store = attention_store(adapter, src, tgt)
    assert store.nbytes() > 0 and store.dense_nbytes() > 0


@pytest.fixture(scope="module")
def windowed_qwen2(tmp_path_factory):
    """A Qwen2 whose second layer reads a sliding window of 16 keys."""
    folder = build_causal("qwen2", tmp_path_factory.mktemp("window") / "qwen2")
    config = json.loads((folder / "config.json").read_text())
    config.update(use_sliding_window=True, sliding_window=16, max_window_layers=1,
                  layer_types=["full_attention", "sliding_attention"])
    (folder / "config.json").write_text(json.dumps(config))
    return open_model(str(folder))


def test_a_sliding_window_shorter_than_the_input_is_a_rule(windowed_qwen2):
    src, tgt = _inputs(windowed_qwen2, LONG)
    store = _assert_tiles_equal_eager(windowed_qwen2, src, tgt)
    assert store.layer("self", 0).rules.window is None and store.layer("self", 1).rules.window == 16
    assert float(store.tile("self", 1, 0, [100], [80])) == 0.0  # 20 keys back: outside the window


def test_modernberts_local_layers_are_a_bidirectional_window(tmp_path):
    adapter = open_model(str(build_masked("modernbert", tmp_path / "modernbert")))
    src, tgt = _inputs(adapter, LONG)
    store = _assert_tiles_equal_eager(adapter, src, tgt)
    windows = [store.layer("encoder_self", i).rules.window for i in range(3)]
    assert windows == [None, 3, None]  # local_attention 4: two keys either side
    assert float(store.tile("encoder_self", 1, 0, [50], [53])) == 0.0 and float(store.tile(
        "encoder_self", 1, 0, [50], [52])) > 0.0


def test_a_two_thousand_token_input_on_a_tiny_decoder_only_model(tmp_path):
    size = {"d_model": 32, "layers": 1, "heads": 4, "kv_heads": 2, "ffn": 64, "positions": 2100}
    adapter = open_model(str(build_causal("llama", tmp_path / "llama", size=size)))
    ids = torch.randint(10, 250, (1, 2000), generator=torch.Generator().manual_seed(0))
    _assert_tiles_equal_eager(adapter, ids, ids)


# -- rules no family in the tests has: against the dense computation ------------------------------------------------
def _dense(q, k, rules, groups) -> torch.Tensor:
    """softmax of the rules written out densely, the sink in the normaliser."""
    h, tq, tk = q.shape[0], q.shape[1], k.shape[1]
    s = q @ k[list(groups)].transpose(-2, -1) * rules.scale
    qpos, kpos = torch.arange(tq)[:, None] + rules.offset, torch.arange(tk)[None, :]
    if rules.alibi is not None:
        s = s + rules.alibi[:, None, None] * (kpos - qpos)
    if rules.softcap is not None:
        s = rules.softcap * torch.tanh(s / rules.softcap)
    seen = torch.ones(tq, tk, dtype=torch.bool)
    if rules.causal:
        seen &= kpos <= qpos
    if rules.window is not None:
        seen &= (qpos - kpos).abs() < rules.window
    if rules.keep is not None:
        seen &= rules.keep[None, :]
    s = s.masked_fill(~seen, float("-inf"))
    if rules.sinks is not None:
        s = torch.cat([s, rules.sinks[:, None, None].expand(h, tq, 1)], dim=-1)
    return s.softmax(-1)[..., :tk]


@pytest.mark.parametrize("rules", [
    ScoreRules(0.25, causal=True, softcap=5.0),
    ScoreRules(0.25, causal=True, alibi=torch.tensor([0.5, 0.25, 0.125, 0.0625])),
    ScoreRules(0.25, causal=True, sinks=torch.tensor([0.0, 1.0, 2.0, -1.0])),
    ScoreRules(0.25, causal=True, window=7, offset=5),
    ScoreRules(0.25, keep=torch.arange(40) % 9 != 3),
])
def test_each_rule_equals_its_dense_form(rules):
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(4, 35, 8, generator=g) * 3, torch.randn(2, 40, 8, generator=g) * 3
    groups = (0, 0, 1, 1)
    store = AttentionStore({"self": (layer_store(q, k, rules, groups),)})
    torch.testing.assert_close(store.dense("self")[0], _dense(q, k, rules, groups), atol=1e-5, rtol=0)
    small = layer_store(q, k, rules, groups)  # blocks smaller than the input: the same log-sum-exp
    torch.testing.assert_close(row_lse(q, k, rules, groups, block=8), small.lse, atol=1e-5, rtol=0)


def test_a_mask_the_rules_cannot_reproduce_is_refused():
    q, k = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    odd = torch.zeros(1, 1, 5, 5)
    odd[..., 2, 0] = float("-inf")  # one key hidden from one query: no rule says so
    inputs = AttentionInputs(q, k, k, 0.5, {"mask": odd})
    with pytest.raises(StoreError, match="not one the store's rules"):
        layer_of(inputs, causal=False, where="odd")
    assert layer_of(replace(inputs, terms={}), causal=False, where="plain").rules.causal is False


def test_tiles_outside_the_input_are_refused():
    store = AttentionStore({"self": (layer_store(torch.randn(2, 4, 3), torch.randn(2, 4, 3), ScoreRules(1.0),
                                                 (0, 1)),)})
    with pytest.raises(IndexError):
        store.tile("self", 0, 0, [4], [0])
    with pytest.raises(IndexError):
        store.tile("self", 0, 2)
    with pytest.raises(KeyError):
        store.tile("cross", 0, 0)
