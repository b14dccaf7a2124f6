"""The demo checkpoints shipped in checkpoints/ load and reach their figures on held-out data."""
from functools import cache
from pathlib import Path

import pytest

from transformer.store import list_checkpoints, load_checkpoint, task_for_checkpoint
from transformer.train import evaluate_model

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"
TARGETS = {"reverse": 0.99, "sort": 0.99, "toy-en-de": 0.95}
MAX_BYTES = 5 * 2**20
HELD_OUT = 300


@cache
def held_out_metrics(name: str) -> dict:
    """Metrics of a shipped checkpoint on validation examples that never appear in its training data."""
    ckpt = load_checkpoint(ROOT / name, load_optimizer=False)
    task = task_for_checkpoint(ckpt)
    train_sources = {e.source for e in task.train}
    task.valid = [e for e in task.valid if e.source not in train_sources][:HELD_OUT]
    assert len(task.valid) == HELD_OUT
    return evaluate_model(ckpt.model, task, n=HELD_OUT)


def test_all_three_demo_checkpoints_are_shipped_and_small():
    assert {p.name for p in list_checkpoints(ROOT)} >= set(TARGETS)
    for name in TARGETS:
        size = sum(f.stat().st_size for f in (ROOT / name).iterdir())
        assert size <= MAX_BYTES, f"{name} is {size / 2**20:.1f} MiB"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_shipped_checkpoint_reaches_its_exact_match_on_held_out_data(name):
    assert held_out_metrics(name)["exact_match"] >= TARGETS[name]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_shipped_checkpoint_has_a_cross_attention_head_aligned_with_the_gold_alignment(name):
    assert held_out_metrics(name)["alignment"]["best"] >= 0.9
