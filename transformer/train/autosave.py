"""A training callback that saves a checkpoint every N steps (atomically), so a crash loses at most N steps."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..store import SNAPSHOTS, save_checkpoint, snapshot_name
from .resume import checkpoint_from_trainer
from .trainer import StepStats, Trainer


class CheckpointEvery:
    """Replace the checkpoint at `path` every `every` steps; a reader always finds the last complete one."""

    def __init__(self, every: int, path: str | Path, *, optimizer: bool = True) -> None:
        if every < 1:
            raise ValueError(f"save interval must be at least 1 step, got {every}")
        self.every, self.path, self.optimizer = every, Path(path), optimizer
        self.saved_step: int | None = None

    def on_step_end(self, trainer: Trainer, stats: StepStats) -> None:
        if stats.step % self.every == 0:
            ckpt = checkpoint_from_trainer(trainer)
            if not self.optimizer:
                ckpt.optimizer_state = None
            save_checkpoint(ckpt, self.path, overwrite=True)
            self.saved_step = stats.step

    def on_eval(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        pass


class SnapshotEvery:
    """Keep the weights every `every` steps (train --keep-snapshots): `path/snapshots/step-0000100/`, each a complete
    checkpoint without the optimizer, saved atomically; unlike `CheckpointEvery` none is overwritten."""

    def __init__(self, every: int, path: str | Path) -> None:
        if every < 1:
            raise ValueError(f"snapshot interval must be at least 1 step, got {every}")
        self.every, self.path = every, Path(path)
        self.saved: list[int] = []

    def save(self, trainer: Trainer) -> None:
        """Snapshot the weights now (the trainer's step), replacing a snapshot of the same step."""
        ckpt = checkpoint_from_trainer(trainer)
        ckpt.optimizer_state = None
        save_checkpoint(ckpt, self.path / SNAPSHOTS / snapshot_name(trainer.step), overwrite=True)
        self.saved.append(trainer.step)

    def on_step_end(self, trainer: Trainer, stats: StepStats) -> None:
        if stats.step % self.every == 0:
            self.save(trainer)

    def on_eval(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        pass
