"""The stream tasks know which tokens of each validation stream are determined (the rest is random filler): for
recall, exactly draw_recall's asked value symbols; for induction, the repeat after its first token. The task rebuilt
from its spec (as a checkpoint's is) knows the same positions; the other tasks have none."""
from __future__ import annotations

import random

import pytest

from transformer.data import TaskSpec, make_task, task_from_spec
from transformer.data.induction import INDUCTION_ALPHABET, draw_repeat
from transformer.data.recall import draw_recall


def test_the_determined_positions_of_a_recall_stream_are_exactly_the_asked_value_symbols():
    task = make_task(TaskSpec(name="recall", seed=3, n_train=20, n_valid=40))
    rng = random.Random(3)  # the generator's own draws, in order: the validation streams come first
    for example in task.valid:
        drawn = draw_recall(rng, task.spec["min_len"], task.spec["max_len"])
        assert drawn.text == example.target
        assert task.determined[example.target] == drawn.asked and drawn.asked


def test_the_determined_positions_of_an_induction_sequence_are_its_repeat_after_the_first_token():
    task = make_task(TaskSpec(name="induction", seed=5, n_train=20, n_valid=40))
    rng = random.Random(5)
    for example in task.valid:
        r = draw_repeat(rng, task.spec["min_len"], task.spec["max_len"], INDUCTION_ALPHABET)
        assert r.text == example.target
        assert task.determined[example.target] == tuple(range(r.second + 1, r.second + r.length))


@pytest.mark.parametrize("name", ["recall", "induction"])
def test_each_determined_token_follows_from_the_stream_before_it(name):
    """At a determined position the token before it occurred earlier, and every earlier occurrence was followed by
    this position's token: the stream so far fixes it."""
    task = make_task(TaskSpec(name=name, seed=0, n_train=20, n_valid=60))
    assert set(task.determined) == {e.target for e in task.valid}
    for text, where in task.determined.items():
        for p in where:
            earlier = [i for i in range(p - 1) if text[i] == text[p - 1]]
            assert earlier and all(text[i + 1] == text[p] for i in earlier), (text, p)


@pytest.mark.parametrize("name", ["recall", "induction"])
def test_a_task_rebuilt_from_its_spec_knows_the_same_positions(name):
    task = make_task(TaskSpec(name=name, seed=1, n_train=20, n_valid=30))
    assert task_from_spec(task.spec).determined == task.determined


@pytest.mark.parametrize("name", ["reverse", "toy-en-de"])
def test_other_tasks_have_no_determined_positions(name):
    assert make_task(TaskSpec(name=name, n_train=30, n_valid=10)).determined is None
