"""Hugging Face encoder-decoders behind the studio's interface: greedy decoding equals `generate`, token for
token and weight for weight, on tiny Marian, BART and T5 models with tokenizers trained here."""
from __future__ import annotations

import copy

import pytest
import torch

from tests.helpers.hf_tiny_models import FAMILIES, build
from transformer.adapters import HFSeq2Seq, adapter_for
from transformer.decode import InputError, greedy_decode, teacher_forced
from transformer.model import AttentionMaps, StepOutput

TEXT = "the dog sees a red house near the tree"
STEPS = 12


@pytest.fixture(scope="module", params=FAMILIES)
def adapter(request, tmp_path_factory) -> HFSeq2Seq:
    folder = build(request.param, tmp_path_factory.mktemp(request.param))
    return HFSeq2Seq.load(str(folder))


def generate(adapter: HFSeq2Seq, text: str, steps: int):
    batch = adapter.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        return adapter.model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=steps,
                                      output_attentions=True, return_dict_in_generate=True)


def test_greedy_tokens_and_every_attention_weight_equal_generate(adapter):
    result = greedy_decode(adapter, TEXT, max_steps=STEPS)
    ref = generate(adapter, TEXT, STEPS)
    assert [s.token_id for s in result.steps] == ref.sequences[0, 1:].tolist()
    assert len(result.steps) >= 4  # long enough to mean something
    steps = [StepOutput(None, d, c) for d, c in zip(ref.decoder_attentions, ref.cross_attentions, strict=True)]
    expected = AttentionMaps.from_steps(ref.encoder_attentions, steps).item(0)
    trace = result.trace
    for kind, want in expected.items():
        assert trace.weights(kind).shape == want.shape  # every layer and head came back
        torch.testing.assert_close(trace.weights(kind), want, atol=1e-5, rtol=0)


def test_trace_keeps_the_tokenizers_own_pieces_specials_included(adapter):
    result = greedy_decode(adapter, TEXT, max_steps=STEPS)
    ids = adapter.tokenizer(TEXT).input_ids
    assert result.trace.source_tokens == tuple(adapter.tokenizer.convert_ids_to_tokens(ids))
    assert result.trace.decoder_input_tokens[0] == adapter.tokenizer.convert_ids_to_tokens(adapter.start_ids[0])
    assert result.to_dict()["source_tokens"][-1] == adapter.tokenizer.eos_token


def test_forced_bos_of_the_generation_config_is_shown_as_forced(adapter):
    result = greedy_decode(adapter, TEXT, max_steps=STEPS)
    bos = adapter.generation_config.forced_bos_token_id
    assert result.steps[0].forced == (bos is not None)
    if bos is not None:
        assert result.steps[0].token_id == bos and result.steps[0].prob == 1.0


def test_banned_pad_is_never_chosen_nor_in_top_k_nor_forceable(adapter):
    result = greedy_decode(adapter, TEXT, max_steps=STEPS, top_k=len(adapter.tokenizer))
    for banned in adapter.unemittable_ids:
        assert all(banned != tid for s in result.steps for tid in [s.token_id])
        assert all(adapter.id_to_token(banned) not in dict(s.top_k) for s in result.steps)
        with pytest.raises(InputError, match="cannot be forced"):
            greedy_decode(adapter, TEXT, forced=[adapter.id_to_token(banned)])
    for s in result.steps:
        if not s.forced:
            assert sum(p for _, p in s.top_k) == pytest.approx(1.0, abs=1e-4)  # renormalised over what can be emitted


def test_forcing_a_token_continues_greedily_from_it(adapter):
    free = greedy_decode(adapter, TEXT, max_steps=8)
    position = 1 if free.steps[0].forced else 0
    other = next(t for t, _ in free.steps[position].top_k[1:] if adapter.token_to_id(t) not in adapter.unemittable_ids)
    prefix = [s.token for s in free.steps[:position]] + [other]
    forced = greedy_decode(adapter, TEXT, max_steps=8, forced=prefix)
    assert forced.steps[position].token == other and forced.steps[position].forced
    assert forced.trace.decoder_input_tokens[position + 1] == other


def test_teacher_forcing_matches_the_greedy_trace_on_the_greedy_output(adapter):
    free = greedy_decode(adapter, TEXT, max_steps=6, stop_at_end=False)
    ids = [s.token_id for s in free.steps[:-1]]
    taught = teacher_forced(adapter, TEXT, adapter.tokenizer.decode(ids, skip_special_tokens=False))
    if list(adapter.target_ids(adapter.tokenizer.decode(ids, skip_special_tokens=False))) != ids:
        pytest.skip("the tokenizer does not round-trip this output")
    for kind in ("decoder_self", "cross"):
        torch.testing.assert_close(taught.trace.weights(kind), free.trace.weights(kind), atol=1e-5, rtol=0)


def test_switching_heads_off_equals_zeroing_their_weights_by_hand(adapter):
    config = adapter.model.config
    heads = config.num_heads if hasattr(config, "num_heads") else config.decoder_attention_heads
    mask = {"cross": torch.ones(2, heads), "encoder_self": torch.ones(2, heads)}
    mask["cross"][1, 0] = 0.0
    mask["encoder_self"][0, 1] = 0.0
    ablated = greedy_decode(adapter, TEXT, max_steps=STEPS, stop_at_end=False, head_mask=mask)
    by_hand = copy.deepcopy(adapter.model)
    from transformer.adapters.hf_seq2seq import attention_outputs
    with torch.no_grad():
        for kind, layer, head in (("cross", 1, 0), ("encoder_self", 0, 1)):
            proj = attention_outputs(by_hand)[kind][layer]
            width = proj.in_features // heads
            proj.weight[:, head * width:(head + 1) * width] = 0.0
    manual = greedy_decode(adapter_for(by_hand, adapter.tokenizer, name="by hand"), TEXT, max_steps=STEPS,
                           stop_at_end=False)
    plain = greedy_decode(adapter, TEXT, max_steps=STEPS, stop_at_end=False)
    assert [s.token_id for s in ablated.steps] == [s.token_id for s in manual.steps]
    torch.testing.assert_close(ablated.trace.cross, manual.trace.cross, atol=1e-5, rtol=0)
    assert [s.prob for s in ablated.steps] != [s.prob for s in plain.steps]  # the switch did something
    assert not any(p._forward_pre_hooks for p in attention_outputs(adapter.model)["cross"])  # nothing left on the model


def test_merging_pieces_into_words_sums_keys_averages_queries_and_keeps_rows_summing_to_one(adapter):
    from transformer.decode import merge_words, word_groups
    trace = greedy_decode(adapter, "the bird eats the green fish", max_steps=8).trace
    merged = merge_words(trace)
    groups = word_groups(trace.source_tokens)
    assert len(merged.source_tokens) == len(groups) <= len(trace.source_tokens)
    assert merged.source_tokens[-1] == trace.source_tokens[-1]  # the end token is a word of its own
    for kind in ("encoder_self", "decoder_self", "cross"):
        torch.testing.assert_close(merged.weights(kind).sum(-1), torch.ones(merged.weights(kind).shape[:-1]),
                                   atol=1e-5, rtol=0)
    queries = word_groups(trace.decoder_input_tokens)
    for q, rows in enumerate(queries):  # mean over a word's query pieces of the sum over a word's key pieces
        for k, cols in enumerate(groups):
            want = trace.cross[1, 1][rows][:, cols].sum(-1).mean()
            assert float(merged.cross[1, 1, q, k]) == pytest.approx(float(want), abs=1e-6)
    assert bool((merged.decoder_self[merged.masked("decoder_self").expand_as(merged.decoder_self)] == 0).all())


def test_a_prefix_is_read_before_the_text_as_t5_task_prefixes_are(tmp_path):
    folder = build("t5", tmp_path / "t5")
    plain, prefixed = HFSeq2Seq.load(str(folder)), HFSeq2Seq.load(str(folder), prefix="the cat sees: ")
    tokens = greedy_decode(prefixed, TEXT, max_steps=4).trace.source_tokens
    assert tokens == tuple(plain.tokenize_source("the cat sees: " + TEXT).tokens)
    assert len(tokens) > len(plain.tokenize_source(TEXT).tokens)


def test_sharded_safetensors_load_and_decode_the_same(tmp_path):
    folder = build("bart", tmp_path / "bart")
    whole = HFSeq2Seq.load(str(folder))
    whole.model.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    whole.tokenizer.save_pretrained(tmp_path / "sharded")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").is_file()
    sharded = HFSeq2Seq.load(str(tmp_path / "sharded"))
    a, b = greedy_decode(whole, TEXT, max_steps=6), greedy_decode(sharded, TEXT, max_steps=6)
    assert [s.token_id for s in a.steps] == [s.token_id for s in b.steps]
    torch.testing.assert_close(a.trace.cross, b.trace.cross, atol=0, rtol=0)


def test_step_probabilities_equal_generate_and_the_model_is_left_as_loaded(adapter):
    result = greedy_decode(adapter, TEXT, max_steps=STEPS)
    batch = adapter.tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        ref = adapter.model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=STEPS, output_scores=True,
                                     return_dict_in_generate=True)
    want = [float(s[0].softmax(-1)[t]) for s, t in zip(ref.scores, ref.sequences[0, 1:], strict=True)]
    assert [s.prob for s in result.steps] == pytest.approx(want, abs=1e-5)
    assert "forward" not in vars(adapter.model.get_output_embeddings())  # the faster head was only borrowed


def test_while_the_faster_head_is_borrowed_others_read_the_model_as_loaded(adapter):
    from transformer.adapters import fast_output_head
    head = adapter.model.get_output_embeddings()
    weight, n = head.weight, sum(p.numel() for p in adapter.model.parameters())
    x = torch.randn(1, 1, head.in_features)
    with torch.no_grad(), fast_output_head(adapter.model):
        assert adapter.model.get_output_embeddings() is head and head.weight is weight  # what HFSeq2Seq() reads
        assert sum(p.numel() for p in adapter.model.parameters()) == n  # the card's parameter count
        torch.testing.assert_close(head(x), torch.nn.functional.linear(x, weight, head.bias), atol=1e-5, rtol=0)
    assert "forward" not in vars(head)


def test_the_faster_output_head_follows_weights_changed_in_place(adapter):
    model = copy.deepcopy(adapter.model)
    changed = adapter_for(model, adapter.tokenizer, name="changed")
    before = greedy_decode(changed, TEXT, max_steps=STEPS)
    chosen = next(s for s in before.steps if not s.forced).token_id
    with torch.no_grad():
        model.get_output_embeddings().weight[chosen] *= -1.0
    after = greedy_decode(changed, TEXT, max_steps=STEPS)
    batch = adapter.tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        ref = model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=STEPS)
    assert [s.prob for s in after.steps] != [s.prob for s in before.steps]  # not a stale copy of the weights
    assert [s.token_id for s in after.steps] == ref[0, 1:].tolist()


def test_a_banned_multi_token_sequence_is_never_output_and_cannot_be_forced(adapter):
    free = greedy_decode(adapter, TEXT, max_steps=STEPS, stop_at_end=False)
    t = next(i for i, s in enumerate(free.steps[:-1]) if not s.forced)
    pair = [free.steps[t].token_id, free.steps[t + 1].token_id]  # what greedy says at steps t, t + 1
    model = copy.deepcopy(adapter.model)
    model.generation_config.bad_words_ids = [*(model.generation_config.bad_words_ids or []), pair]
    banned = adapter_for(model, adapter.tokenizer, name="banned pair")
    result = greedy_decode(banned, TEXT, max_steps=STEPS)
    batch = adapter.tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        ref = model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=STEPS)
    ids = [s.token_id for s in result.steps]
    assert ids == ref[0, 1:].tolist() and ids[t] == pair[0] and ids[t + 1] != pair[1]
    assert adapter.id_to_token(pair[1]) not in dict(result.steps[t + 1].top_k)
    prefix = [s.token for s in free.steps[: t + 2]]
    with pytest.raises(InputError, match="cannot be forced after .*bad_words_ids"):
        greedy_decode(banned, TEXT, forced=prefix)
    assert greedy_decode(banned, TEXT, forced=prefix[:-1]).steps[t].token_id == pair[0]  # the first alone is fine
