"""The demo checkpoints shipped in checkpoints/ load and reach their figures on held-out data."""
from pathlib import Path

import pytest

from transformer.checkpoints import list_checkpoints, load_checkpoint, task_for_checkpoint
from transformer.training import evaluate_model

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"
TARGETS = {"reverse": 0.99, "sort": 0.99, "toy-en-de": 0.95}
MAX_BYTES = 5 * 2**20


def test_all_three_demo_checkpoints_are_shipped_and_small():
    assert {p.name for p in list_checkpoints(ROOT)} >= set(TARGETS)
    for name in TARGETS:
        size = sum(f.stat().st_size for f in (ROOT / name).iterdir())
        assert size <= MAX_BYTES, f"{name} is {size / 2**20:.1f} MiB"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_shipped_checkpoint_reaches_its_figures_on_held_out_data(name):
    ckpt = load_checkpoint(ROOT / name, load_optimizer=False)
    task = task_for_checkpoint(ckpt)
    train_sources = {e.source for e in task.train}
    held_out = [e for e in task.valid if e.source not in train_sources][:300]
    task.valid = held_out
    metrics = evaluate_model(ckpt.model, task, n=len(held_out))
    assert len(held_out) == 300
    assert metrics["exact_match"] >= TARGETS[name]
    assert metrics["alignment"]["best"] >= 0.9, metrics["alignment"]
