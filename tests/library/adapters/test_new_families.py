"""More decoder-only families (Mistral, GPT-NeoX/Pythia, Phi-3, OLMo 2, Falcon, Gemma 3, Gemma 2), each a tiny random
model built from its config and opened through `load_hf_model`: greedy tokens and weights equal `generate`, every
captured weight and every tile recomputed from the attention store equals the eager weights (a sliding window
shorter than the input included), and the stored decode gives `generate`'s tokens; what cannot be shown is refused
in one line."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import NEW_CAUSAL, WINDOW, build_new, lines
from transformer.adapters import HFCausalLM, attention_store, load_hf_model, store_of_insides
from transformer.decode import greedy_decode

PROMPT = "A man in a blue shirt is riding a bike"
LONG = " ".join(lines(12))  # ~300 tokens: longer than the sliding windows
# the layers with the window
WINDOWED = {"mistral": (0, 1), "phi3": (0, 1), "gemma3_text": (0,), "gemma2": (0,), "gpt_oss": (0,)}


@pytest.fixture(scope="module", params=NEW_CAUSAL)
def adapter(request, tmp_path_factory) -> HFCausalLM:
    family = request.param
    return load_hf_model(str(build_new(family, tmp_path_factory.mktemp(family) / family, window=WINDOW)))


def _family(adapter: HFCausalLM) -> str:
    return adapter.model.config.model_type


def _ids(adapter: HFCausalLM, text: str) -> torch.Tensor:
    return torch.tensor([adapter.tokenize_source(text).ids])


def test_it_opens_as_a_causal_lm(adapter):
    assert isinstance(adapter, HFCausalLM) and adapter.family.name == "decoder-only"
    assert adapter.describe()["model_type"] == _family(adapter) and adapter.n_layers == 2 and adapter.n_heads == 4


def test_greedy_tokens_and_weights_equal_generate(adapter):
    result = greedy_decode(adapter, PROMPT, max_steps=6, stop_at_end=True)
    ids = _ids(adapter, PROMPT)
    with torch.no_grad():
        out = adapter.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                     max_new_tokens=6, output_attentions=True, return_dict_in_generate=True)
    n = ids.shape[1]
    assert [s.token_id for s in result.steps] == out.sequences[0, n:].tolist()
    w = result.trace.weights("self")
    for layer in range(w.shape[0]):
        torch.testing.assert_close(w[layer, :, :n, :n], out.attentions[0][layer][0].float(), atol=1e-5, rtol=0)
        for t in range(1, len(result.steps)):
            theirs = out.attentions[t][layer][0, :, 0].float()  # a sliding-window cache: the last keys only
            row, kept = w[layer, :, n - 1 + t, : n + t], theirs.shape[-1]
            torch.testing.assert_close(row[:, n + t - kept:], theirs, atol=1e-5, rtol=0)
            assert float(row[:, : n + t - kept].abs().sum()) == 0.0


def _tiles_equal_eager(adapter: HFCausalLM, ids: torch.Tensor):
    insides = adapter.insides(ids, ids)
    store = store_of_insides(adapter, insides)
    for layer in range(adapter.n_layers):
        eager = insides.attentions["self"][layer][0].float()
        torch.testing.assert_close(insides.inputs["self"][layer].pattern()[0], eager, atol=1e-5, rtol=0)
        q, k = eager.shape[1:]
        for head in range(adapter.n_heads):
            torch.testing.assert_close(store.tile("self", layer, head), eager[head], atol=1e-5, rtol=0)
            rows, keys = slice(q // 3, q), slice(k // 4, k // 2 + 1)
            torch.testing.assert_close(store.tile("self", layer, head, rows, keys), eager[head][rows, keys],
                                       atol=1e-5, rtol=0)
        torch.testing.assert_close(store.tile("self", layer, None), eager.mean(0), atol=1e-5, rtol=0)
        inputs = insides.inputs["self"][layer]
        lse = inputs.scores()[0].logsumexp(-1)
        if inputs.rules.sinks is not None:  # the sink's logit is in the normaliser
            lse = torch.logaddexp(lse, inputs.rules.sinks[:, None].expand_as(lse))
        torch.testing.assert_close(store.layer("self", layer).lse, lse, atol=1e-5, rtol=1e-6)
    return store


def test_captured_weights_and_every_tile_equal_the_eager_weights(adapter):
    _tiles_equal_eager(adapter, _ids(adapter, PROMPT))


def test_a_sliding_window_shorter_than_the_input_is_exact(adapter):
    ids = _ids(adapter, LONG)
    assert ids.shape[1] > 10 * WINDOW
    store = _tiles_equal_eager(adapter, ids)
    windowed = WINDOWED.get(_family(adapter), ())
    for layer in range(adapter.n_layers):
        assert store.layer("self", layer).rules.window == (WINDOW if layer in windowed else None)
    if windowed:
        layer = windowed[0]
        assert float(store.tile("self", layer, 0, [100], [100 - WINDOW])) == 0.0
        assert float(store.tile("self", layer, 0, [100], [101 - WINDOW])) > 0.0


def test_the_stored_decode_gives_generates_tokens(adapter):
    prompt = adapter.tokenize_source(LONG).ids
    result = greedy_decode(adapter, LONG, max_steps=4, keep="store")
    steps, store = result.steps, result.trace.store
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = adapter.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                     max_new_tokens=4)
    assert [s.token_id for s in steps] == out[0, len(prompt):].tolist()
    fed = torch.tensor([[*prompt, *(s.token_id for s in steps[:-1])]])
    eager = attention_store(adapter, fed, fed)
    for layer in range(adapter.n_layers):
        assert store.layer("self", layer).rules.window == eager.layer("self", layer).rules.window
        torch.testing.assert_close(store.layer("self", layer).lse, eager.layer("self", layer).lse, atol=1e-5,
                                   rtol=1e-6)
        rows = slice(len(prompt) - 1, None)
        torch.testing.assert_close(store.tile("self", layer, None, rows), eager.tile("self", layer, None, rows),
                                   atol=1e-5, rtol=0)


def test_gpt_neox_rotates_only_its_rotary_share_of_each_head(tmp_path):
    adapter = load_hf_model(str(build_new("gpt_neox", tmp_path / "neox")))  # rotary_pct 0.5: 4 of 8 dims rotate
    ids = _ids(adapter, PROMPT)
    insides = adapter.insides(ids, ids)
    block = adapter.model.gpt_neox.layers[0]
    with torch.no_grad():
        qkv = block.attention.query_key_value(block.input_layernorm(insides.residual["decoder"][0]))
    q, k, _ = qkv.view(*ids.shape, 4, 24).transpose(1, 2).chunk(3, dim=-1)  # (B, H, T, 8) before rotation
    captured = insides.inputs["self"][0]
    torch.testing.assert_close(captured.queries[..., 4:], q[..., 4:], atol=1e-6, rtol=0)  # the part RoPE leaves
    torch.testing.assert_close(captured.keys[..., 4:], k[..., 4:], atol=1e-6, rtol=0)
    torch.testing.assert_close(captured.queries[:, :, 0], q[:, :, 0], atol=1e-6, rtol=0)  # position 0: no turn
    assert not torch.allclose(captured.queries[:, :, 5:, :4], q[:, :, 5:, :4], atol=1e-3)  # later ones turned


def test_each_familys_residual_path_is_taken_apart(adapter):
    """Its layers, norms and projections (tests/library/analysis/test_why_new_families.py checks the sums)."""
    path = adapter.residual_path()  # Phi-3's, GPT-NeoX's and Falcon's fused projections split
    assert [tuple(s.name for s in layer) for layer in path.stacks["decoder"].layers] == [("self", "mlp")] * 2
    proj = path.projections["self"][0]
    assert proj.wq.shape == (32, 32) and proj.wk.shape[0] == proj.wv.shape[0] == (32 if _family(adapter) ==
                                                                                    "gpt_neox" else 16)
    assert path.parallel == (_family(adapter) in ("gpt_neox", "falcon"))


def test_gemma2s_soft_cap_is_a_rule_the_store_applies(tmp_path):
    adapter = load_hf_model(str(build_new("gemma2", tmp_path / "gemma2", window=WINDOW)))  # cap 5, large weights
    ids = _ids(adapter, LONG)
    insides = adapter.insides(ids, ids)
    store = store_of_insides(adapter, insides)
    eager = insides.attentions["self"][1][0].float()
    assert store.layer("self", 1).rules.softcap == 5.0 and insides.inputs["self"][1].rules.softcap == 5.0
    uncapped = store.with_rules("self", 1, softcap=None)  # the same store without the rule: other weights
    assert (uncapped.tile("self", 1, 0) - eager[0]).abs().max() > 1e-2
    torch.testing.assert_close(store.tile("self", 1, 0), eager[0], atol=1e-5, rtol=0)


def test_gpt_oss_sinks_are_a_rule_the_store_applies(tmp_path):
    from dataclasses import replace

    from transformer.model import AttentionStore, layer_store
    adapter = load_hf_model(str(build_new("gpt_oss", tmp_path / "gpt_oss", window=WINDOW)))
    ids = _ids(adapter, PROMPT)
    insides = adapter.insides(ids, ids)
    store = store_of_insides(adapter, insides)
    sinks = adapter.model.model.layers[1].self_attn.sinks.detach().float()
    torch.testing.assert_close(store.layer("self", 1).rules.sinks, sinks)
    eager = insides.attentions["self"][1][0].float()
    assert float((1 - eager.sum(-1)).min()) > 1e-3  # the sink takes weight: rows sum below 1
    torch.testing.assert_close(store.tile("self", 1, None).sum(-1), eager.mean(0).sum(-1), atol=1e-5, rtol=0)
    one = store.layer("self", 1)
    sinkless = AttentionStore({"self": (layer_store(one.queries, one.keys, replace(one.rules, sinks=None),
                                                    one.groups),)})
    torch.testing.assert_close(sinkless.tile("self", 0, None).sum(-1), torch.ones(ids.shape[1]))  # other weights


def test_a_falcon_with_alibi_decodes_but_its_insides_are_refused_by_name(tmp_path):
    from transformer.adapters.hf_load import HFModelError
    adapter = load_hf_model(str(build_new("falcon", tmp_path / "falcon", alibi=True)))
    result = greedy_decode(adapter, PROMPT, max_steps=3)  # the maps the model returns
    assert len(result.steps) == 3
    ids = _ids(adapter, PROMPT)
    for call in (lambda: adapter.insides(ids, ids), lambda: greedy_decode(adapter, PROMPT, max_steps=2, keep="store")):
        with pytest.raises(HFModelError, match="uses ALiBi") as refused:
            call()
        assert "\n" not in str(refused.value)


def test_a_multi_query_falcon_reads_one_key_head(tmp_path):
    adapter = load_hf_model(str(build_new("falcon", tmp_path / "falcon", new_decoder_architecture=False,
                                          multi_query=True)))  # Falcon-7B's layout: one key/value head for all
    assert adapter.head_groups()["self"] == (0, 0, 0, 0)
    store = _tiles_equal_eager(adapter, _ids(adapter, LONG))
    assert store.layer("self", 0).keys.shape[0] == 1
    steps = greedy_decode(adapter, PROMPT, max_steps=3, keep="store").steps
    assert [s.token_id for s in steps] == [s.token_id for s in greedy_decode(adapter, PROMPT, max_steps=3).steps]


def test_the_output_head_of_the_last_residual_is_the_models_logits(adapter):
    ids = _ids(adapter, PROMPT)
    insides = adapter.insides(ids, ids)
    with torch.no_grad():
        torch.testing.assert_close(adapter.output_head(insides.residual["decoder"][-1]), insides.logits, atol=1e-4,
                                   rtol=1e-4)


def test_queries_and_keys_before_rotation_are_the_ones_rope_turns(adapter):
    ids = _ids(adapter, PROMPT)
    inputs = adapter.insides(ids, ids).inputs["self"][0]
    if inputs.unrotated is None:  # a fused projection (GPT-NeoX, Phi-3) or Falcon's own code: not offered
        assert _family(adapter) in ("gpt_neox", "phi3", "falcon")
        return
    if hasattr(adapter.model.model.layers[0].self_attn, "q_norm"):  # Gemma 3, OLMo 2: the projections, before the norm
        assert inputs.unrotated[0].shape == inputs.queries.shape
        return
    q, k = inputs.unrotated  # only the rotation between these and the queries and keys
    scaled = next((float(m.attention_scaling) for m in adapter.model.modules() if hasattr(m, "attention_scaling")),
                  1.0)  # YaRN (gpt-oss) scales the rotation's tables
    torch.testing.assert_close(q[:, :, 0] * scaled, inputs.queries[:, :, 0], atol=1e-5, rtol=1e-5)  # angle 0
    torch.testing.assert_close(k[:, :, 0] * scaled, inputs.keys[:, :, 0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(q.norm(dim=-1) * scaled, inputs.queries.norm(dim=-1), atol=1e-4, rtol=1e-4)


def test_nothing_of_a_capture_or_a_stored_decode_stays_on_the_model(adapter):
    from transformer.adapters.hf_capture import _CALLS
    ids = _ids(adapter, PROMPT)
    adapter.insides(ids, ids)  # transformers puts its own output-capturing hooks on at the first call: they stay
    hooks = {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks)) for name, m in adapter.model.named_modules()}
    before = adapter.model.config._attn_implementation
    adapter.insides(ids, ids)
    greedy_decode(adapter, PROMPT, max_steps=2, keep="store")
    assert adapter.model.config._attn_implementation == before == ("eager" if _family(adapter) == "falcon"
                                                                     else "studio")
    assert _CALLS == {}
    assert {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks))
            for name, m in adapter.model.named_modules()} == hooks
