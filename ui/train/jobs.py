"""Training jobs of the app's runs: server-owned, ~20 probe frames, autosaved as they go."""
from __future__ import annotations

from typing import Any

from transformer.train import AUTOSAVE_EVERY_S, LiveRun, Trainer, TrainingJob, autosave, registry
from ui.server import runs_root, training_threads

TIMELINE_FRAMES = 20  # probe recordings aimed for over a job's budget, however short


def new_job(trainer: Trainer, *, target_steps: int, max_seconds: float, probe: str, probe_every: int,
            processes: int = 1) -> TrainingJob:
    """A job that trains to its budget whether or not any browser session still watches it."""
    return TrainingJob(trainer, max_steps=target_steps, max_seconds=max_seconds, probe=probe or None,
                       probe_every=probe_every, threads=training_threads(), processes=processes,
                       probe_frames=TIMELINE_FRAMES, autosave_every_s=AUTOSAVE_EVERY_S)


def attach_callbacks(run: LiveRun, job: TrainingJob) -> None:
    """Autosave `run` from `job`'s training state while it trains and when it ends (call before job.start())."""
    root = runs_root()  # where the session that started the job saves runs, read now: the job outlives it

    def on_state(ended_job: TrainingJob, state: dict[str, Any]) -> None:
        if run.job is ended_job:
            autosave(run, root, state)

    def on_end(ended_job: TrainingJob) -> None:
        with run.lock:
            if run.job is ended_job:  # not when a Resume already replaced it (its own end saves it)
                autosave(run, root)
        registry.prune()

    job.on_state, job.on_end = on_state, on_end
