"""What the Train page's buttons do: start, stop, resume, continue a checkpoint, save; no widgets here."""
from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from transformer.adapters import adapter_for
from transformer.decode import read_source
from transformer.model import ConfigError
from transformer.store import (
    SNAPSHOTS,
    Checkpoint,
    CheckpointError,
    is_valid_run_name,
    save_checkpoint,
    task_for_checkpoint,
)
from transformer.train import (
    AUTOSAVE_EVERY_S,
    JobPlan,
    LiveRun,
    RunRecord,
    TrainingJob,
    autosave,
    autosave_name,
    keep_snapshot,
    record_from_checkpoint,
    run_checkpoint,
    server_runs,
)
from ui.models import live_option_id, select_model
from ui.server import LIMITS, check_limits, max_training_processes, runs_root, training_threads

from .live_run import live_run, set_live_run

TIMELINE_FRAMES = 20  # probe recordings aimed for over a job's budget, however short


class BusyError(ValueError):
    """The session's run is still training, so this action has to wait."""


def _check_probe(probe: str, probe_every: int) -> None:
    if len(probe) > LIMITS.max_probe_chars:
        raise ConfigError(f"The probe sentence has {len(probe)} characters; at most {LIMITS.max_probe_chars}.")
    if probe_every < LIMITS.min_probe_every:
        raise ConfigError(f"Record the probe at most every {LIMITS.min_probe_every} steps.")


def _job(plan: JobPlan, record: RunRecord | None) -> TrainingJob:
    """A job of `plan` as this server runs its jobs: its training threads, ~20 probe frames over the budget,
    autosaved as it goes; it trains to its budget whether or not any browser session still watches it."""
    return TrainingJob(replace(plan, threads=training_threads(), probe_frames=TIMELINE_FRAMES,
                               autosave_every_s=AUTOSAVE_EVERY_S), record)


def _attach_autosave(run: LiveRun, job: TrainingJob) -> None:
    """Autosave `run` from `job`'s training state while it trains and when it ends (call before job.start())."""
    root = runs_root()  # where the session that started the job saves runs, read now: the job outlives it

    def on_state(ended_job: TrainingJob, state: dict[str, Any]) -> None:
        if run.job is ended_job:
            autosave(run, root, state)

    def on_snapshot(ended_job: TrainingJob, state: dict[str, Any]) -> None:
        if run.job is ended_job:
            keep_snapshot(run, root, state)

    def on_end(ended_job: TrainingJob) -> None:
        with run.lock:
            if run.job is ended_job:  # not when a Resume already replaced it (its own end saves it)
                autosave(run, root)
                if job.plan.snapshot_every:
                    keep_snapshot(run, root)  # the curves end at the run's last step
        server_runs.prune()

    job.on_state, job.on_end, job.on_snapshot = on_state, on_end, on_snapshot


def new_live_run(plan: JobPlan, record: RunRecord | None = None, earlier_timeline: list | None = None) -> LiveRun:
    """A run of the server (registered, autosaved) whose first job trains by `plan` from `record` (None: an
    untrained model); the caller starts `run.job`."""
    job = _job(plan, record)
    run = LiveRun(job, earlier_timeline=list(earlier_timeline or []))
    _attach_autosave(run, job)
    server_runs.add(run)
    return run


def _launch(plan: JobPlan, record: RunRecord | None = None, earlier_frames: list | None = None) -> LiveRun:
    current = live_run()
    if current is not None and current.active:
        raise BusyError("A run is still training: stop it before starting another.")
    if not 1 <= plan.processes <= max_training_processes():
        raise ConfigError(f"Train on 1 to {max_training_processes()} processes (this machine's cores), "
                          f"not {plan.processes}.")
    run = new_live_run(plan, record, earlier_frames)
    set_live_run(run)
    run.job.start()
    select_model(live_option_id(run))
    return run


def start_run(plan: JobPlan) -> LiveRun:
    """Check the plan against the app's caps, then train a new model on a background job; raises ConfigError or
    BusyError. With a stage rule (the stage demo) the run stops as soon as its picture is clean."""
    n_train = plan.task.spec.get("n_train")
    check_limits(plan.model_cfg, plan.train_cfg, max_seconds=plan.max_seconds,
                 n_train=n_train if isinstance(n_train, int) else None)
    _check_probe(plan.probe or "", plan.probe_every)
    return _launch(plan)


def resume_target(run: LiveRun, more_steps: int) -> int:
    """Where Resume trains to: the unfinished step target, else `more_steps` further."""
    step = run.record.step
    return run.plan.max_steps if step < run.plan.max_steps else step + more_steps


def run_budget(run: LiveRun) -> float:
    """The run's time budget in seconds (the app's limit for a run planned without one)."""
    return float(run.max_seconds) if run.max_seconds is not None else float(LIMITS.max_seconds)


def resume_run(run: LiveRun, more_steps: int, max_seconds: float | None = None) -> None:
    """Train the same model further on a new job (optimizer, schedule and history carry on) with a new time
    budget of `max_seconds` (default: the run's own); another session may be watching the same run."""
    max_seconds = run_budget(run) if max_seconds is None else float(max_seconds)
    if not 0 < max_seconds <= LIMITS.max_seconds:
        raise ConfigError(f"The time budget is {max_seconds:,.0f} s; this app allows 1 to {LIMITS.max_seconds:,.0f} s.")
    with run.lock:  # two sessions watching one run: one training process per run
        if run.active:
            raise BusyError("The run is already training.")
        target = resume_target(run, more_steps)
        if target > LIMITS.max_steps:
            raise ConfigError(f"Resuming to step {target:,} passes this app's cap of {LIMITS.max_steps:,} steps.")
        job = _job(replace(run.plan, max_steps=target, max_seconds=max_seconds, probe=run.probe or None),
                   run.record)
        _attach_autosave(run, job)
        run.replace_job(job)
        job.start()
    set_live_run(run)
    select_model(live_option_id(run))


def continue_checkpoint(ckpt: Checkpoint, *, more_steps: int, max_seconds: float, probe: str,
                        probe_every: int, uploaded: bool = False) -> LiveRun:
    """Resume training a saved or uploaded checkpoint (its task is rebuilt from the stored spec); the probe frames
    it saved open the run's timeline."""
    if ckpt.optimizer_state is None:
        raise CheckpointError("This checkpoint has no optimizer state, so its training cannot be resumed exactly.")
    if uploaded and ckpt.task_spec.get("data"):
        raise CheckpointError("This checkpoint was trained on corpus files named in its config; the app does not "
                              "read files an upload names. Continue it with the command line, where those files are.")
    target = ckpt.step + more_steps
    if target > LIMITS.max_steps:
        raise ConfigError(f"Continuing to step {target:,} passes this app's cap of {LIMITS.max_steps:,} steps.")
    n_train = ckpt.task_spec.get("n_train")
    check_limits(ckpt.model_config, ckpt.train_config.replace(max_steps=target), max_seconds=max_seconds,
                 n_train=n_train if isinstance(n_train, int) else None)
    _check_probe(probe, probe_every)
    plan = JobPlan(task=task_for_checkpoint(ckpt), model_cfg=ckpt.model_config, train_cfg=ckpt.train_config,
                   max_steps=target, max_seconds=max_seconds, probe=probe or None, probe_every=probe_every)
    return _launch(plan, record_from_checkpoint(ckpt), earlier_frames=ckpt.frames)


def change_probe(run: LiveRun, probe: str) -> None:
    """Record a different probe sentence from now on (earlier snapshots keep their own tokens)."""
    probe = probe.strip()
    _check_probe(probe, run.probe_every)
    _, model = run.job.latest_model()
    if model is not None:  # raises InputError for text the model cannot read
        read_source(adapter_for(model, run.plan.task.src_tokenizer), probe)
    run.job.probe = probe


def save_run(run: LiveRun, name: str, *, overwrite: bool = False) -> Path:
    """Save the run under runs/<name> with its probe frames; raises CheckpointError (bad name, exists, write error)
    or BusyError."""
    problem = is_valid_run_name(name)
    if problem is not None:
        raise CheckpointError(problem)
    root = runs_root()
    with run.lock:
        if run.active:
            raise BusyError("Stop training before saving: a checkpoint is taken between steps.")
        ckpt = run_checkpoint(run)
    try:
        path = save_checkpoint(ckpt, root / name.strip(), overwrite=overwrite)
        kept = root / autosave_name(run) / SNAPSHOTS
        if kept.is_dir() and path.name != autosave_name(run):  # the run's weight snapshots go with it
            try:
                shutil.copytree(kept, path / SNAPSHOTS, dirs_exist_ok=True)
            except OSError as exc:
                raise CheckpointError(f"saved, but its weight snapshots could not be copied: {exc}") from None
    except CheckpointError as exc:  # the message names the run, not where the server keeps runs
        raise CheckpointError(str(exc).replace(f"{root}{os.sep}", "")) from None
    run.saved_as = path.name
    return path


def live_checkpoint(run: LiveRun) -> Checkpoint:
    """The run as a checkpoint with its probe frames: exact (with optimizer) when stopped, else the newest weights
    snapshot."""
    if not run.active:
        return run_checkpoint(run)
    _, model = run.job.latest_model()
    if model is None:  # nothing published yet: the run as it was saved
        return run_checkpoint(run)
    snap = run.job.snapshot()
    plan, task = run.plan, run.plan.task
    return Checkpoint(model, plan.model_cfg, plan.train_cfg, task.src_tokenizer, task.tgt_tokenizer, dict(task.spec),
                      snap.step, snap.elapsed, dict(snap.evals[-1]) if snap.evals else {},
                      [dict(r) for r in snap.history], [dict(r) for r in snap.evals], frames=run.timeline())
