"""The induction task: each sequence repeats one chunk at a random offset (so no position solves it), the rest of its
letters distinct; the recipe a checkpoint stores rebuilds the same data."""
from __future__ import annotations

import random
from collections import Counter

from transformer.data import TaskSpec, make_task, task_from_spec
from transformer.data.induction import INDUCTION_ALPHABET, MIN_CHUNK, draw_repeat


def _repeat_of(text: str) -> tuple[int, int, int]:
    """(first, second, length) of the longest chunk that occurs twice in `text`, found from the text alone."""
    best = (0, 0, 0)
    for length in range(len(text) // 2, 0, -1):
        for first in range(len(text) - 2 * length + 1):
            second = text.find(text[first:first + length], first + length)
            if second >= 0:
                return first, second, length
    return best


def test_each_sequence_repeats_one_chunk_and_nothing_else():
    rng = random.Random(0)
    for _ in range(300):
        r = draw_repeat(rng, 24, 60, INDUCTION_ALPHABET)
        assert 24 <= len(r.text) <= 60
        assert r.text[r.first:r.first + r.length] == r.text[r.second:r.second + r.length]
        assert max(MIN_CHUNK, len(r.text) // 3) <= r.length <= len(r.text) // 2 and r.second >= r.first + r.length
        counts = Counter(r.text)
        chunk = set(r.text[r.first:r.first + r.length])
        assert all(n == (2 if ch in chunk else 1) for ch, n in counts.items())  # only the chunk repeats
        assert _repeat_of(r.text)[2] == r.length


def test_the_repeat_starts_at_many_offsets_so_position_cannot_solve_it():
    task = make_task(TaskSpec(name="induction", n_train=2000, n_valid=50))
    seconds, gaps = Counter(), Counter()
    for ex in task.train:
        first, second, length = _repeat_of(ex.target)
        seconds[second] += 1
        gaps[second - first] += 1
    assert len(seconds) >= 25 and max(seconds.values()) < 0.1 * len(task.train)
    assert len(gaps) >= 20 and max(gaps.values()) < 0.15 * len(task.train)


def test_the_task_is_a_continuation_after_an_empty_prompt_with_one_shared_vocabulary():
    task = make_task(TaskSpec(name="induction", n_train=100, n_valid=20))
    assert all(ex.source == "" and ex.alignment is None for ex in task.train + task.valid)
    assert not {ex.target for ex in task.valid} & {ex.target for ex in task.train}
    assert task.shares_vocabulary and task.src_tokenizer is task.tgt_tokenizer
    assert task.spec == {"name": "induction", "seed": 0, "n_train": 100, "n_valid": 20, "min_len": 24, "max_len": 60}
    assert task.probe == task.valid[0].target  # the probe is a sequence with its repeat, read as the prompt
    again = task_from_spec(task.spec)
    assert [ex.target for ex in again.train] == [ex.target for ex in task.train]
