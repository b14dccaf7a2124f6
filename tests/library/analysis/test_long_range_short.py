"""The long-range detectors on a model of few positions (our decoder-only one): its inputs stay within them (a
24-position model is read at 24 tokens, not the detectors' shortest default of 32), and a model too short for a
needle and its copy is refused with the reason."""
from __future__ import annotations

import pytest
import torch

from transformer.adapters import adapter_for
from transformer.analysis import long_range_heads
from transformer.data import build_char_tokenizer
from transformer.decode import InputError
from transformer.model import ModelConfig, build_model

TOK = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")


def _adapter(max_len: int):
    cfg = ModelConfig(src_vocab_size=TOK.vocab_size, tgt_vocab_size=TOK.vocab_size, d_model=16, n_heads=2,
                      n_decoder_layers=2, d_ff=16, dropout=0.0, max_len=max_len, architecture="decoder-only")
    torch.manual_seed(0)
    return adapter_for(build_model(cfg).eval(), TOK, TOK)


def test_a_model_of_few_positions_is_read_within_them():
    adapter = _adapter(24)
    assert adapter.max_target_len == 24
    found = long_range_heads(adapter)
    assert found.length == 24 and found.retrieval is not None and found.retrieval["lengths"] == [24]
    assert len(found.frame) == 4 and found.frame["retrieval"].between(0, 1).all()
    assert (found.frame["pattern"] != "").all()


def test_a_model_too_short_for_a_needle_and_its_copy_is_refused():
    with pytest.raises(InputError, match="too few for the long-range detectors"):
        long_range_heads(_adapter(16))  # two needles of 8 tokens and nothing around them


def test_an_untrained_encoder_decoder_of_few_positions_gets_every_heads_pattern():
    """Its greedy output runs to its last position; the cross-attention's patterns read that decode as it was made
    (its own ids), so nothing is re-tokenized past the model's positions."""
    cfg = ModelConfig(src_vocab_size=TOK.vocab_size, tgt_vocab_size=TOK.vocab_size, d_model=16, n_heads=2,
                      n_encoder_layers=1, n_decoder_layers=1, d_ff=16, dropout=0.0, max_len=24)
    torch.manual_seed(0)
    found = long_range_heads(adapter_for(build_model(cfg).eval(), TOK, TOK))
    kinds = set(found.frame["kind"])
    assert {"encoder_self", "cross"} <= kinds and (found.frame["pattern"] != "").all()
