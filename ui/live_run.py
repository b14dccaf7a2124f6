"""The training run a browser session owns: its Trainer, the current background job and earlier jobs' timeline."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import streamlit as st

from transformer.decode import AttentionTrace
from transformer.train import Trainer, TrainingJob

LIVE_RUN_KEY = "train_live_run"
WAS_TRAINING_KEY = "live_run_was_training"


@dataclass
class LiveRun:
    """One trainer, trained by one or more successive jobs (Train, then Resume ...)."""

    trainer: Trainer
    job: TrainingJob
    probe: str
    probe_every: int
    max_seconds: float
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    job_number: int = 1
    earlier_timeline: list[tuple[int, AttentionTrace]] = field(default_factory=list)
    saved_as: str | None = None

    @property
    def task_name(self) -> str:
        """Name of the task being trained."""
        return self.trainer.task.name

    @property
    def active(self) -> bool:
        """True while the job waits for a slot or trains."""
        return self.job.snapshot(history_tail=1).active

    def timeline(self) -> list[tuple[int, AttentionTrace]]:
        """Probe attention snapshots of every job of this run, oldest first (one per training step)."""
        merged = dict(self.earlier_timeline)
        merged.update(self.job.timeline())
        return sorted(merged.items(), key=lambda item: item[0])

    def replace_job(self, job: TrainingJob) -> None:
        """Continue with a new job (after Stop or the end of a budget), keeping the timeline so far."""
        self.earlier_timeline = self.timeline()
        self.job = job
        self.job_number += 1


def live_run() -> LiveRun | None:
    """This session's training run, if it started one."""
    return st.session_state.get(LIVE_RUN_KEY)


def set_live_run(run: LiveRun | None) -> None:
    """Make `run` this session's training run (None forgets it)."""
    st.session_state[LIVE_RUN_KEY] = run


def run_just_ended(active: bool) -> bool:
    """Called by every live refresh with the run's state: True once, at the first refresh after it stopped
    training, when the whole page must rerun (buttons, cards and forms change)."""
    if active:
        st.session_state[WAS_TRAINING_KEY] = True
        return False
    return bool(st.session_state.pop(WAS_TRAINING_KEY, False))
