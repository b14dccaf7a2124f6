"""The stage demo's stopping rule as a training callback: evaluate now and then, stop when the picture is clean."""
from __future__ import annotations

from collections import deque
from typing import Any, Sequence

from ..model import CleanRule
from .trainer import StepStats, Trainer

CLEAN = "picture clean"


class StopWhenClean:
    """Training callback: once the recent training batches are nearly all right, evaluate every `check_every`
    steps; when `rule.met` holds, set `trainer.done` so the loop ends (reason "picture clean").

    `clean` keeps the metrics of the evaluation that passed, `last` the newest evaluation seen, `own` the newest
    one it asked for.
    """

    def __init__(self, rule: CleanRule) -> None:
        self.rule = rule
        self.accuracy: deque[float] = deque(maxlen=rule.check_every)
        self.clean: dict[str, Any] | None = None
        self.last: dict[str, Any] | None = None
        self.own: dict[str, Any] | None = None  # the newest evaluation this rule asked for
        self.candidate = False  # a check passed; a larger one confirms it
        self.checks = 0

    def on_step_end(self, trainer: Trainer, stats: StepStats) -> None:
        self.accuracy.append(stats.accuracy)
        if self.clean is not None or stats.step % self.rule.check_every:
            return
        if len(self.accuracy) < (self.accuracy.maxlen or 0) or sum(self.accuracy) / len(self.accuracy) < \
                self.rule.gate_accuracy:
            return
        self.checks += 1
        self.own = trainer.evaluate(self.rule.eval_examples)  # on_eval below judges it
        if self.candidate:
            self.candidate = False
            self.own = trainer.evaluate(self.rule.confirm_examples)

    def on_eval(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        self.last = metrics
        if self.clean is None and self.rule.met(metrics):
            if metrics["n"] >= min(self.rule.confirm_examples, len(trainer.task.valid)):
                self.clean = metrics
                trainer.done = CLEAN
            else:
                self.candidate = True

    def note(self, trainer: Trainer) -> str:
        """One line on how the run ended: clean at which step and second, or not (yet) clean and why."""
        m = self.clean or self.last
        scores = "" if m is None else f" (exact match {m['exact_match']:.3f}{_aligned(m)})"
        if self.clean is not None:
            return f"the picture is clean at step {trainer.step:,} after {trainer.elapsed:.1f} s of training{scores}"
        return (f"the picture is not clean yet at step {trainer.step:,} after {trainer.elapsed:.1f} s{scores}; "
                f"it needs exact match {self.rule.min_exact_match:g} and a head {self.rule.min_alignment:g} aligned")


def rule_to_meet(rule: CleanRule | None, evals: Sequence[dict[str, Any]]) -> CleanRule | None:
    """The stage rule a run's next job stops by: `rule` while no evaluation so far met it; None once one did, so a
    run resumed after its clean picture trains on to its budget."""
    return None if rule is None or any(rule.met(m) for m in evals) else rule


def _aligned(metrics: dict[str, Any]) -> str:
    a = metrics.get("alignment")
    return "" if not a else f", head {a['best_head']} {a['best']:.2f} aligned"
