"""Tokens grouped into words, sentences, lines or chat turns: the groups read from byte-level and SentencePiece pieces,
and a group's weight is the sum of its tokens' weights (a long input's rows from the store at ~1.3k tokens, and a short
trace merged by sentences)."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import SIZE, build, lines
from transformer.decode import (
    GROUPINGS,
    GroupingError,
    greedy_decode,
    group_sums,
    merge_segments,
    segment_groups,
    segment_labels,
)
from transformer.store import open_model

BYTE_LEVEL = ["<s>", "A", "Ġdog", "Ġruns", ".", "ĠTwo", "Ġmen", "Ġsit", "!", "Ċ", "U", "ser", ":", "Ġhi", "Ċ",
              "Ass", "istant", ":", "Ġok", "."]


def test_byte_level_pieces_group_into_sentences_lines_and_turns():
    assert segment_groups(BYTE_LEVEL, "sentence") == [[0], [1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14],
                                                      [15, 16, 17, 18, 19]]
    assert segment_groups(BYTE_LEVEL, "line") == [[0], list(range(1, 10)), list(range(10, 15)), list(range(15, 20))]
    assert segment_groups(BYTE_LEVEL, "turn") == [[0], list(range(1, 10)), list(range(10, 15)), list(range(15, 20))]
    assert segment_groups(BYTE_LEVEL, "token") == [[i] for i in range(len(BYTE_LEVEL))]
    assert segment_labels(BYTE_LEVEL, segment_groups(BYTE_LEVEL, "line"))[1] == "A dog runs. Two men sit!"
    for by in GROUPINGS:  # contiguous, in order, covering every piece
        assert [i for g in segment_groups(BYTE_LEVEL, by) for i in g] == list(range(len(BYTE_LEVEL)))
    with pytest.raises(GroupingError, match="not 'paragraph'"):
        segment_groups(BYTE_LEVEL, "paragraph")


def test_chat_markers_start_turns_and_sentencepiece_line_breaks_end_lines():
    chat = ["<|im_start|>", "user", "Ċ", "Hi", ".", "<|im_end|>", "Ċ", "<|im_start|>", "assistant", "Ċ", "Hello"]
    assert segment_groups(chat, "turn") == [[0, 1, 2, 3, 4, 5, 6], [7, 8, 9, 10]]
    sp = ["<s>", "▁One", "▁line", ".", "<0x0A>", "▁Next", "▁one", "."]
    assert segment_groups(sp, "line") == [[0], [1, 2, 3, 4], [5, 6, 7]]
    assert segment_groups(sp, "sentence") == [[0], [1, 2, 3, 4], [5, 6, 7]]
    assert segment_groups(["a", "<id 300>", "b"], "line") == [[0, 1, 2]]  # an id past the tokenizer is no special


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return open_model(str(build("qwen2", tmp_path_factory.mktemp("q") / "q", size={**SIZE, "positions": 2048})))


def test_a_long_rows_group_sums_are_the_sums_of_its_tokens_weights(qwen):
    text = "\n".join(lines(32))  # ~1,300 tokens: decoded with the store
    result = greedy_decode(qwen, text, max_steps=2)
    store, pieces = result.trace.store, result.trace.decoder_input_tokens
    assert store is not None and len(pieces) > 1024
    row = store.tile("self", 1, 2, [store.layer("self", 1).n_rows - 1], slice(None))[0]
    for by in ("word", "sentence", "line", "turn"):
        groups = segment_groups(pieces, by)
        sums = group_sums(row, groups)
        assert sums.shape == (len(groups),)
        for g, group in enumerate(groups):
            assert float(sums[g]) == pytest.approx(float(row[group].sum()), abs=1e-6)
        assert float(sums.sum()) == pytest.approx(1.0, abs=1e-5)
    assert len(segment_groups(pieces, "line")) == text.count("\n") + 1 + 0  # one group per line (no BOS for Qwen2)


def test_a_short_trace_merged_by_sentences_keeps_rows_summing_to_one(qwen):
    trace = greedy_decode(qwen, "A dog runs. Two men sit! A cat sleeps.", max_steps=3).trace
    merged = merge_segments(trace, "sentence")
    groups = segment_groups(trace.decoder_input_tokens, "sentence")
    w, full = merged.weights("self"), trace.weights("self")
    assert w.shape[-1] == len(groups) == 3
    for q, rows in enumerate(groups):
        for k, keys in enumerate(groups):
            want = full[:, :, rows][..., keys].sum(-1).mean(-1)
            torch.testing.assert_close(w[:, :, q, k], want, atol=1e-6, rtol=0)
