"""The `recall` task: filler digits with key-value pairs at random places, then one key; the answer is its value,
so only a lookup of the key's earlier occurrence solves it."""
from __future__ import annotations

import random

import pytest

from transformer.data import TaskSpec, make_task
from transformer.data.recall import RECALL_PAIRS, draw_recall
from transformer.model import ConfigError, default_configs


def test_the_answer_is_the_value_after_the_queried_keys_only_occurrence():
    rng = random.Random(0)
    for _ in range(200):
        ex = draw_recall(rng, 40, 300)
        stream, key = ex.source[:-1], ex.source[-1]
        assert 40 <= len(stream) <= 300 and key.isupper() and stream.count(key) == 1
        assert ex.target == stream[stream.index(key) + 1] and ex.target.islower()
        assert sum(c.isupper() for c in stream) == RECALL_PAIRS
        assert all(c.isdigit() or c.isalpha() for c in stream)


def test_where_the_pair_stands_changes_so_no_position_solves_it():
    rng = random.Random(1)
    places = {(ex.source[:-1].index(ex.source[-1]) * 10) // len(ex.source) for ex in
              (draw_recall(rng, 100, 100) for _ in range(300))}
    assert len(places) == 10  # the queried pair falls in every tenth of the stream


def test_the_task_holds_out_its_validation_streams_and_trains_a_rope_model():
    task = make_task(TaskSpec(name="recall", n_train=300, n_valid=20, seed=3))
    assert not {ex.source for ex in task.train} & {ex.source for ex in task.valid}
    assert task.shares_vocabulary and task.spec["min_len"] < task.spec["max_len"]
    model, _ = default_configs("recall", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size)
    assert (model.architecture, model.positions) == ("decoder-only", "rope") and model.max_len >= 2048
    with pytest.raises(ConfigError):
        make_task(TaskSpec(name="recall", min_len=8, max_len=20))  # too short for its pairs
