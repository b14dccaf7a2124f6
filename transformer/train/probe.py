"""The probe: one sentence decoded now and then while training, its attention kept frame by frame (the Train page's
timeline; the frames a checkpoint saves beside its weights)."""
from __future__ import annotations

import time
from typing import Any, Sequence

from ..adapters import InspectableModel, adapter_for
from ..data import MASK_TOKEN, known_output, probe_positions
from ..decode import AttentionTrace, DecodeResult, InputError, greedy_decode, masked_decode
from ..model import eval_mode
from .trainer import StepStats, Trainer

PROBE_FRAMES = 20  # recordings aimed for over a run's budget, however short


def probe_trace(trainer: Trainer, text: str) -> AttentionTrace | None:
    """The trace of `text` greedily decoded by the trainer's model as it is now (eval mode); an encoder-only model
    predicts at the probe's masks instead (`masked_probe`). None when the model's tokenizer cannot read the text."""
    task = trainer.task
    try:
        with eval_mode(trainer.model):
            adapter = adapter_for(trainer.model, task.src_tokenizer, task.tgt_tokenizer, task=task.name)
            if not adapter.family.decodes:
                return masked_probe(adapter, task.name, text).trace
            return greedy_decode(adapter, text).trace
    except InputError:
        return None


def masked_probe(adapter: InspectableModel, task_name: str, text: str) -> DecodeResult:
    """An encoder-only model's probe: a text with masks (or "A </s> B") as typed; a plain text as the pair it
    trains on, the text and its task's answer (where the task knows it), every third token of the answer masked."""
    if MASK_TOKEN in text or "</s>" in text:
        return masked_decode(adapter, text)
    answer = known_output(task_name, text) or ""
    masked_lm: Any = adapter  # an encoder-only adapter (its decode reads pairs)
    source = masked_lm.tokenize_pair(text, answer) if answer else adapter.tokenize_source(text)
    return masked_decode(adapter, text, answer, mask_positions=probe_positions(source.ids))


class ProbeRecorder:
    """Training callback that decodes `text` at the start, about `frames` times over the budget (steps or seconds,
    whichever is nearer) and at the end (`finish`); `timeline` holds (step, trace), oldest first."""

    def __init__(self, text: str, *, frames: int = PROBE_FRAMES, earlier: Sequence[tuple[int, AttentionTrace]] = ()
                 ) -> None:
        self.text, self.frames = text, max(frames, 1)
        self.timeline: list[tuple[int, AttentionTrace]] = list(earlier)
        self.every: int | None = None
        self.every_s: float | None = None
        self.last_at = time.perf_counter()

    def start(self, trainer: Trainer) -> None:
        """Set the cadence from the trainer's budgets and record where training starts."""
        span = max(trainer.cfg.max_steps - trainer.step, 1)
        self.every = max(span // self.frames, 1)
        self.every_s = trainer.cfg.max_seconds / self.frames if trainer.cfg.max_seconds else None
        if not self.timeline or self.timeline[-1][0] != trainer.step:
            self.record(trainer)

    def record(self, trainer: Trainer) -> None:
        """Decode the probe now and keep its trace (a step recorded again keeps the newer trace)."""
        trace = probe_trace(trainer, self.text)
        self.last_at = time.perf_counter()
        if trace is None:
            return
        if self.timeline and self.timeline[-1][0] == trainer.step:
            self.timeline.pop()
        self.timeline.append((trainer.step, trace))

    def finish(self, trainer: Trainer) -> None:
        """Record the last step unless it already is."""
        if not self.timeline or self.timeline[-1][0] != trainer.step:
            self.record(trainer)

    def on_step_end(self, trainer: Trainer, stats: StepStats) -> None:
        if self.every is None:
            self.start(trainer)
        assert self.every is not None  # start set it
        due = stats.step % self.every == 0
        if not due and self.every_s is not None:
            due = time.perf_counter() - self.last_at >= self.every_s
        if due:
            self.record(trainer)

    def on_eval(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        pass
