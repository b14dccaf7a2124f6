"""Greedy decodes batched across callers give what each decode gives alone (tokens, probabilities, every weight),
on our encoder-decoder and on Hugging Face's; what cannot be batched is decoded alone."""
from __future__ import annotations

import threading

import pytest
import torch

from tests.helpers.hf_tiny_models import FAMILIES, build
from tests.helpers.tiny_models import tiny_reverse_model
from transformer.adapters import HFSeq2Seq, adapter_for
from transformer.data import build_char_tokenizer
from transformer.decode import DecodeQueue, InputError, can_batch, greedy_decode, greedy_decode_many
from transformer.model import ModelConfig, build_model

pytestmark = pytest.mark.slow

REVERSE_TEXTS = ["abcdefg", "hello", "zyxwvutsrqponm", "qq", "attention"]
HF_TEXTS = ["the dog runs", "a big red house near the tree", "fish", "the woman sees a small green bird eats",
            "cat"]


@pytest.fixture(scope="module")
def native():
    model, src, tgt = tiny_reverse_model(seed=3)
    return adapter_for(model, src, tgt, name="tiny reverse")


@pytest.fixture(scope="module", params=FAMILIES)
def hf(request, tmp_path_factory) -> HFSeq2Seq:
    return HFSeq2Seq.load(str(build(request.param, tmp_path_factory.mktemp(request.param))))


def assert_same(batched, alone) -> None:
    assert batched.output_tokens == alone.output_tokens
    assert batched.finished == alone.finished and batched.output_text == alone.output_text
    assert [s.forced for s in batched.steps] == [s.forced for s in alone.steps]
    for a, b in zip(batched.steps, alone.steps, strict=True):
        assert a.prob == pytest.approx(b.prob, abs=1e-5)
        assert [t for t, _ in a.top_k] == [t for t, _ in b.top_k]
    assert batched.trace.source_tokens == alone.trace.source_tokens
    assert batched.trace.decoder_input_tokens == alone.trace.decoder_input_tokens
    for kind in alone.trace.kinds:
        torch.testing.assert_close(batched.trace.weights(kind), alone.trace.weights(kind), atol=1e-5, rtol=1e-4)


def check_batch(adapter, texts: list[str]) -> None:
    ks = [5, 3, 5, 2, 4]
    assert can_batch(adapter)
    results = greedy_decode_many(adapter, texts, top_k=ks, max_steps=12)
    for text, k, result in zip(texts, ks, results, strict=True):
        assert_same(result, greedy_decode(adapter, text, top_k=k, max_steps=12))


def test_a_batch_of_different_decodes_equals_each_decode_alone(native):
    check_batch(native, REVERSE_TEXTS)


def test_a_batch_of_hugging_face_decodes_equals_each_decode_alone(hf):
    check_batch(hf, HF_TEXTS)


def test_text_a_model_cannot_read_gets_its_error_in_its_place(native):
    results = greedy_decode_many(native, ["abc", "   ", "defg"])
    assert isinstance(results[1], InputError)
    assert_same(results[0], greedy_decode(native, "abc"))
    assert_same(results[2], greedy_decode(native, "defg"))


def test_callers_arriving_together_share_one_batch_and_get_their_own_results(hf):
    queue = DecodeQueue(window=1.0)  # long enough for every thread to ask on a busy machine
    texts = [*HF_TEXTS, HF_TEXTS[0]]  # the same decode twice: computed once
    results: dict[int, object] = {}
    barrier = threading.Barrier(len(texts))

    def ask(i: int) -> None:
        barrier.wait()
        results[i] = queue.greedy(hf, texts[i], top_k=5, max_steps=10)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert queue.batch_sizes == [len(HF_TEXTS)]
    for i, text in enumerate(texts):
        assert_same(results[i], greedy_decode(hf, text, max_steps=10))


def test_the_queue_passes_errors_and_leaves_unbatchable_models_alone(native):
    queue = DecodeQueue(window=0)
    with pytest.raises(InputError):
        queue.greedy(native, "  ")
    tok = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")
    cfg = ModelConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=16, n_heads=2,
                      n_decoder_layers=1, d_ff=32, dropout=0.0, max_len=48, architecture="decoder-only")
    causal = adapter_for(build_model(cfg).eval(), tok, tok)
    assert not can_batch(causal)
    before = list(queue.batch_sizes)
    assert_same(queue.greedy(causal, "abcd", max_steps=6), greedy_decode(causal, "abcd", max_steps=6))
    assert queue.batch_sizes == before


def test_sessions_own_adapters_of_one_network_share_a_batch(native):
    model, src, tgt = native.model, native.src_tokenizer, native.tgt_tokenizer
    adapters = [adapter_for(model, src, tgt, name=f"session {i}") for i in range(3)]  # a session builds its own
    queue = DecodeQueue(window=1.0)
    results: dict[int, object] = {}
    barrier = threading.Barrier(3)

    def ask(i: int) -> None:
        barrier.wait()
        results[i] = queue.greedy(adapters[i], REVERSE_TEXTS[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert queue.batch_sizes == [3]
    for i in range(3):
        assert_same(results[i], greedy_decode(native, REVERSE_TEXTS[i]))
