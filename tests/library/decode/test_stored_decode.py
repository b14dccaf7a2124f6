"""Decoding with the attention store (`greedy_decode(..., keep="store")`: the fused forward, no maps): the tokens
are `generate`'s and those of the decode with maps, each row's log-sum-exp is the eager one, and the trace's maps
materialised from the store are the eager maps."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import CAUSAL, lines
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.our_models import _ours
from transformer.adapters import attention_store
from transformer.decode import InputError, greedy_decode
from transformer.store import open_model

PROMPT = " ".join(lines(12))  # a few hundred tokens


@pytest.fixture(scope="module", params=[*CAUSAL, "ours-decoder-only-pre"])
def adapter(request, tmp_path_factory):
    if request.param.startswith("ours"):
        return _ours(request.param)
    return open_model(str(build_causal(request.param, tmp_path_factory.mktemp(request.param) / request.param)))


def _prompt(adapter) -> tuple[list[int], list[str], str]:
    text = PROMPT if adapter.source == "huggingface" else "abcdefgabc"
    source = adapter.tokenize_source(text)
    return adapter.decoder_prefix(source), [*source.tokens, *adapter.prefix_tokens(source)[len(source.tokens):]], text


def test_the_stored_decode_gives_the_greedy_tokens_and_generates(adapter):
    prompt, _, text = _prompt(adapter)
    steps = greedy_decode(adapter, text, max_steps=4, keep="store").steps
    plain = greedy_decode(adapter, text, max_steps=4, stop_at_end=True, keep="maps")
    assert [s.token_id for s in steps] == [s.token_id for s in plain.steps]
    if adapter.source == "huggingface":
        ids = torch.tensor([prompt])
        with adapter.running():
            out = adapter.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                         max_new_tokens=4)
        assert [s.token_id for s in steps] == out[0, len(prompt):].tolist()
    for a, b in zip(steps, plain.steps, strict=True):
        assert a.prob == pytest.approx(b.prob, abs=1e-5)


def test_the_stored_rows_and_log_sum_exps_are_the_eager_ones(adapter):
    prompt, tokens, text = _prompt(adapter)
    result = greedy_decode(adapter, text, max_steps=4, keep="store")
    store = result.trace.store
    assert list(result.trace.decoder_input_tokens[: len(prompt)]) == tokens
    fed = [*prompt, *(s.token_id for s in result.steps[:-1])]
    ids = torch.tensor([fed])
    src = ids[:, : len(prompt) - 1] if adapter.source == "checkpoint" else ids
    eager = attention_store(adapter, src, ids)
    n_layers, n_heads = adapter.head_counts()["self"]
    for layer in range(n_layers):
        torch.testing.assert_close(store.layer("self", layer).lse, eager.layer("self", layer).lse, atol=1e-5,
                                   rtol=1e-6)
        torch.testing.assert_close(store.layer("self", layer).value_norms, eager.layer("self", layer).value_norms,
                                   atol=1e-4, rtol=1e-5)
        for head in range(n_heads):
            rows = slice(len(prompt) - 1, None)  # the decode steps' rows: exact at every step
            torch.testing.assert_close(store.tile("self", layer, head, rows), eager.tile("self", layer, head, rows),
                                       atol=1e-5, rtol=0)
    plain = greedy_decode(adapter, text, max_steps=4, stop_at_end=True).trace
    assert result.trace.decoder_input_tokens == plain.decoder_input_tokens
    assert result.trace.step_offset == plain.step_offset
    assert result.trace.shape("self") == plain.shape("self") and result.trace.n_heads == n_heads
    torch.testing.assert_close(result.trace.weights("self"), plain.weights("self"), atol=1e-5, rtol=0)


def test_a_prompt_past_the_models_context_is_refused(adapter):
    from transformer.decode import model_context
    with pytest.raises(InputError, match="reads at most"):
        greedy_decode(adapter, "abc " * (2 * model_context(adapter)), max_steps=2, keep="store")


def test_a_long_trace_keeps_its_store_in_a_side_file_and_recomputes_any_tile(adapter, tmp_path):
    from transformer.decode import TRACE_FORMAT_VERSION, load_trace_json, save_trace_json
    prompt, _, text = _prompt(adapter)
    result = greedy_decode(adapter, text, max_steps=3, keep="store")
    side = save_trace_json(result, tmp_path / "long.json", side_above=0)
    assert side == tmp_path / "long.store.safetensors" and side.is_file()
    data = __import__("json").loads((tmp_path / "long.json").read_text())
    assert "attention" not in data and data["store"] == {"file": side.name}
    assert data["format_version"] == TRACE_FORMAT_VERSION == 4
    back = load_trace_json(tmp_path / "long.json")
    assert [s.token_id for s in back.steps] == [s.token_id for s in result.steps]
    n_layers, n_heads = adapter.head_counts()["self"]
    for layer in range(n_layers):
        rows = [len(prompt) - 1, len(prompt)]
        torch.testing.assert_close(back.trace.store.tile("self", layer, n_heads - 1, rows),
                                   result.trace.store.tile("self", layer, n_heads - 1, rows), atol=0, rtol=0)
    assert back.trace.store.layer("self", 0).rules == result.trace.store.layer("self", 0).rules
    assert save_trace_json(result, tmp_path / "short.json") is None  # small: the weights inline, as before
    assert "attention" in __import__("json").loads((tmp_path / "short.json").read_text())
    side.unlink()
    from transformer.decode import TraceFormatError
    with pytest.raises(TraceFormatError, match="cannot read the attention store"):
        load_trace_json(tmp_path / "long.json")


def test_a_sliding_window_shorter_than_the_prompt_is_stored_as_its_rule(tmp_path):
    import json
    folder = build_causal("qwen2", tmp_path / "qwen2")
    config = json.loads((folder / "config.json").read_text())
    config.update(use_sliding_window=True, sliding_window=16, max_window_layers=1,
                  layer_types=["full_attention", "sliding_attention"])
    (folder / "config.json").write_text(json.dumps(config))
    adapter = open_model(str(folder))
    prompt, _, text = _prompt(adapter)
    result = greedy_decode(adapter, text, max_steps=3, keep="store")
    steps, store = result.steps, result.trace.store
    assert [s.token_id for s in steps] == [s.token_id for s in greedy_decode(adapter, text, max_steps=3).steps]
    assert store.layer("self", 1).rules.window == 16 and store.layer("self", 0).rules.window is None
    ids = torch.tensor([[*prompt, *(s.token_id for s in steps[:-1])]])
    eager = attention_store(adapter, ids, ids)
    for layer in range(2):
        torch.testing.assert_close(store.layer("self", layer).lse, eager.layer("self", layer).lse, atol=1e-5,
                                   rtol=1e-6)
        torch.testing.assert_close(store.tile("self", layer, 3, slice(-4, None)),
                                   eager.tile("self", layer, 3, slice(-4, None)), atol=1e-5, rtol=0)


def test_auto_keeps_the_maps_of_a_short_prompt_and_store_gives_the_same_result(adapter):
    _, _, text = _prompt(adapter)
    plain = greedy_decode(adapter, text, max_steps=3, stop_at_end=True, keep="maps")
    short = greedy_decode(adapter, text, max_steps=3)
    assert short.trace.store is None and [s.token_id for s in short.steps] == [s.token_id for s in plain.steps]
    long = greedy_decode(adapter, text, max_steps=3, keep="store")
    assert long.trace.store is not None
    assert [s.token_id for s in long.steps] == [s.token_id for s in plain.steps]
    assert long.trace.source_tokens == plain.trace.source_tokens
    assert long.trace.decoder_input_tokens == plain.trace.decoder_input_tokens
    assert long.source_text == text and long.output_text == plain.output_text
    torch.testing.assert_close(long.trace.matrix("self", 0, 1), plain.trace.matrix("self", 0, 1), atol=1e-5, rtol=0)


def test_nothing_of_the_store_forward_stays_on_the_model(adapter):
    from transformer.adapters import hf_capture
    hooks = {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks)) for name, m in adapter.network.named_modules()}
    before = getattr(getattr(adapter.network, "config", None), "_attn_implementation", None)
    greedy_decode(adapter, _prompt(adapter)[2], max_steps=2, keep="store")
    assert getattr(getattr(adapter.network, "config", None), "_attn_implementation", None) == before
    assert hf_capture._CALLS == {}
    assert {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks))
            for name, m in adapter.network.named_modules()} == hooks
    assert not adapter.network.training
