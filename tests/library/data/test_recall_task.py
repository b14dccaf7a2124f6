"""The `recall` task: key-value pairs in a stream of filler, each pair seen again later; every value symbol of a
later occurrence follows from the pair's first occurrence, and nothing else in the stream is determined."""
from __future__ import annotations

import random

import pytest

from transformer.data import TaskSpec, make_task
from transformer.data.recall import RECALL_ALPHABET, RECALL_ASKS, RECALL_PAIRS, RECALL_VALUE, draw_recall
from transformer.model import ConfigError, default_configs


def test_each_asked_symbol_follows_its_predecessors_only_earlier_occurrence():
    rng = random.Random(0)
    for _ in range(200):
        r = draw_recall(rng, 72, 300)
        text = r.text
        assert 72 <= len(text) <= 300 and set(text) <= set(RECALL_ALPHABET)
        assert RECALL_PAIRS * RECALL_ASKS <= len(r.asked) <= RECALL_PAIRS * RECALL_ASKS * RECALL_VALUE
        for i in r.asked:
            before = text[:i - 1]
            cue = text[i - 1]  # a key or a value symbol: seen once or more before, always followed by the same one
            assert cue in before and all(text[j + 1] == text[i] for j in range(i - 1) if text[j] == cue)
            assert text.count(cue) == 1 + RECALL_ASKS  # never in the filler


def test_where_the_pairs_stand_changes_so_no_position_solves_it():
    rng = random.Random(1)
    places = {(p * 10) // 120 for _ in range(300) for p in draw_recall(rng, 120, 120).asked}
    assert len(places) == 10  # an asked symbol falls in every tenth of the stream


def test_the_task_holds_out_its_validation_streams_and_trains_a_rope_model():
    task = make_task(TaskSpec(name="recall", n_train=300, n_valid=20, seed=3))
    assert not {ex.target for ex in task.train} & {ex.target for ex in task.valid}
    assert {ex.source for ex in task.train} == {""} and task.probe == task.valid[0].target
    assert task.shares_vocabulary and task.spec["min_len"] < task.spec["max_len"]
    model, _ = default_configs("recall", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size)
    assert (model.architecture, model.positions) == ("decoder-only", "rope") and model.max_len >= 2048
    with pytest.raises(ConfigError):
        make_task(TaskSpec(name="recall", min_len=8, max_len=20))  # too short for its pairs
