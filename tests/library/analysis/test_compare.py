"""Comparing two decodings: the first divergence, and B - A only where the token axes agree."""
from __future__ import annotations

import pytest
import torch

from transformer.adapters import adapter_for
from transformer.analysis import attention_difference, first_divergence
from transformer.charts import difference_frame, difference_heatmap
from transformer.decode import AttentionTrace, greedy_decode
from transformer.store import load_checkpoint


def _trace(decoder_tokens: tuple[str, ...], seed: int, source=("a", "b", "c")) -> AttentionTrace:
    gen = torch.Generator().manual_seed(seed)
    s, t = len(source), len(decoder_tokens)
    return AttentionTrace(source, decoder_tokens, torch.rand(1, 2, s, s, generator=gen),
                          torch.rand(2, 2, t, t, generator=gen), torch.rand(2, 2, t, s, generator=gen))


@pytest.mark.parametrize("a, b, expected", [
    (("x", "y"), ("x", "y"), None), (("x", "y"), ("x", "z"), 1), (("x",), ("x", "y"), 1), ((), ("q",), 0)])
def test_first_divergence(a, b, expected):
    assert first_divergence(a, b) == expected


def test_the_difference_keeps_only_rows_before_the_decoder_inputs_part():
    a, b = _trace(("<s>", "c", "b", "a"), 1), _trace(("<s>", "c", "x"), 2)
    diff = attention_difference(a, b, "cross", 1, 0)
    assert diff.query_tokens == ("<s>", "c") and diff.key_tokens == ("a", "b", "c") and diff.rows_left_out == 2
    expected = (b.matrix("cross", 1, 0)[:2] - a.matrix("cross", 1, 0)[:2]).numpy()
    assert diff.difference == pytest.approx(expected)
    square = attention_difference(a, b, "decoder_self", 0, None)
    assert square.difference.shape == (2, 2)
    assert attention_difference(a, b, "encoder_self", 0, 1).difference.shape == (3, 3)


def test_different_source_tokens_give_no_difference():
    with pytest.raises(ValueError, match="different source tokens"):
        attention_difference(_trace(("<s>",), 1), _trace(("<s>",), 1, source=("a", "b")), "cross", 0, None)


def test_a_model_compared_with_itself_shows_no_divergence_and_an_all_zero_difference(tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    a = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), "hello")
    b = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), "hello")
    assert first_divergence(a.output_tokens, b.output_tokens) is None
    for kind in ("encoder_self", "decoder_self", "cross"):
        diff = attention_difference(a.trace, b.trace, kind, 0, None)
        assert diff.rows_left_out == 0 and diff.max_abs == 0.0
    frame = difference_frame(attention_difference(a.trace, b.trace, "cross", 1, 1))
    assert len(frame) == len(a.trace.decoder_input_tokens) * len(a.trace.source_tokens)
    assert (frame["difference"] == 0).all()
    spec = difference_heatmap(attention_difference(a.trace, b.trace, "cross", 1, 1)).to_dict()
    assert spec["encoding"]["color"]["scale"]["domain"] == [-1.0, 1.0]
