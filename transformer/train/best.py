"""Keep the best model seen during training (by validation loss or BLEU) beside the last one."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..store import Checkpoint
from .device import cpu_copy
from .resume import checkpoint_from_trainer
from .trainer import StepStats, Trainer

KEEP_BEST = ("loss", "bleu", "none")


class KeepBest:
    """Training callback: at each evaluation, copy the weights when the chosen metric improved."""

    def __init__(self, by: str = "loss") -> None:
        if by not in KEEP_BEST:
            raise ValueError(f"keep-best must be one of {', '.join(KEEP_BEST)}, got {by!r}")
        self.by = by
        self.value: float | None = None
        self.metrics: dict[str, Any] = {}
        self.weights: dict[str, Any] | None = None

    def on_step_end(self, trainer: Trainer, stats: StepStats) -> None:
        """Nothing to do between evaluations."""

    def on_eval(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """Remember the weights when `metrics` beat the best so far."""
        value = metrics.get(self.by)
        if self.by == "none" or not isinstance(value, (int, float)) or value != value:
            return
        better = self.value is None or (value < self.value if self.by == "loss" else value > self.value)
        if better:
            self.value, self.metrics = float(value), dict(metrics)
            self.weights = cpu_copy(trainer.model.state_dict())

    def checkpoint(self, trainer: Trainer) -> Checkpoint | None:
        """The best weights as a checkpoint (no optimizer), or None when none was kept or the last is the best."""
        if self.weights is None or self.metrics.get("step") == trainer.step:
            return None
        ckpt = checkpoint_from_trainer(trainer)
        ckpt.model.load_state_dict(self.weights)
        label = "validation loss" if self.by == "loss" else "validation BLEU"
        return replace(ckpt, step=int(self.metrics["step"]), metrics=dict(self.metrics), optimizer_state=None,
                       weights=f"best {label} ({self.value:.4g} at step {self.metrics['step']})")
