"""Merging pieces into words for every family: an encoder-only model's WordPiece pieces ("##" continues a word) and a
decoder-only model's byte-level pieces, each kind's keys summed and queries averaged along its own axes."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_masked_models import build as build_masked
from transformer.decode import fill_masks, greedy_decode, merge_words, word_groups
from transformer.store import open_model


def test_wordpiece_pieces_start_a_word_unless_marked_as_continuing():
    pieces = ["[CLS]", "the", "un", "##believ", "##able", "dog", "[SEP]"]
    assert word_groups(pieces) == [[0], [1], [2, 3, 4], [5], [6]]
    assert word_groups(["<s>", "Ġthe", "Ġun", "bel", "Ġdog"]) == [[0], [1], [2, 3], [4]]  # byte-level BPE as before


def _check(trace, merged) -> None:
    spec = trace.family
    groups = {"source": word_groups(trace.source_tokens), "target": word_groups(trace.decoder_input_tokens)}
    for kind in spec.kinds:
        rows, cols = (groups[axis] for axis in spec.axes[kind])
        w = merged.weights(kind)
        assert tuple(w.shape[2:]) == (len(rows), len(cols))
        unmasked = ~merged.masked(kind).expand_as(w).all(-1)
        torch.testing.assert_close(w.sum(-1)[unmasked], torch.ones_like(w.sum(-1)[unmasked]), atol=1e-5, rtol=0)
        for q, r in enumerate(rows):  # mean over a word's query pieces of the sum over a word's key pieces
            for k, c in enumerate(cols):
                want = trace.weights(kind)[0, 0][r][:, c].sum(-1).mean()
                assert float(w[0, 0, q, k]) == pytest.approx(float(want), abs=1e-6)


def test_an_encoder_only_trace_merges_its_one_kind(tmp_path):
    model = open_model(str(build_masked("bert", tmp_path / "bert")))
    trace = fill_masks(model, "the unbelievable dog [MASK] in the park").trace
    merged = merge_words(trace)
    assert merged.family == trace.family and len(merged.source_tokens) < len(trace.source_tokens)
    _check(trace, merged)


def test_a_decoder_only_trace_merges_and_keeps_its_first_step(tmp_path):
    model = open_model(str(build_causal("gpt2", tmp_path / "gpt2")))
    trace = greedy_decode(model, "the unbelievable dog runs", max_steps=3).trace
    merged = merge_words(trace)
    assert merged.family == trace.family and merged.head_groups == trace.head_groups
    groups = word_groups(trace.decoder_input_tokens)
    assert trace.step_offset in groups[merged.step_offset]
    _check(trace, merged)
