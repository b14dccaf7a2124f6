"""What the Train page's buttons do: start, stop, resume, continue a checkpoint, save; no widgets here."""
from __future__ import annotations

import os
from pathlib import Path

from transformer.data import Task
from transformer.decode import encode_source
from transformer.model import CleanRule, ConfigError, ModelConfig, TrainConfig
from transformer.store import Checkpoint, CheckpointError, is_valid_run_name, save_checkpoint
from transformer.train import StopWhenClean, Trainer, checkpoint_from_trainer, trainer_from_checkpoint
from ui.models import live_option_id, select_model
from ui.server import LIMITS, check_limits, max_training_processes, runs_root

from .jobs import attach_callbacks, new_job
from .live_run import LiveRun, live_run, set_live_run


class BusyError(ValueError):
    """The session's run is still training, so this action has to wait."""


def _check_probe(probe: str, probe_every: int) -> None:
    if len(probe) > LIMITS.max_probe_chars:
        raise ConfigError(f"The probe sentence has {len(probe)} characters; at most {LIMITS.max_probe_chars}.")
    if probe_every < LIMITS.min_probe_every:
        raise ConfigError(f"Record the probe at most every {LIMITS.min_probe_every} steps.")


def _launch(trainer: Trainer, *, target_steps: int, max_seconds: float, probe: str, probe_every: int,
            processes: int = 1, earlier_frames: list | None = None) -> LiveRun:
    current = live_run()
    if current is not None and current.active:
        raise BusyError("A run is still training: stop it before starting another.")
    if not 1 <= processes <= max_training_processes():
        raise ConfigError(f"Train on 1 to {max_training_processes()} processes (this machine's cores), "
                          f"not {processes}.")
    job = new_job(trainer, target_steps=target_steps, max_seconds=max_seconds, probe=probe, probe_every=probe_every,
                  processes=processes)
    run = LiveRun(trainer, job, probe, probe_every, max_seconds, earlier_timeline=list(earlier_frames or []))
    attach_callbacks(run, job)
    set_live_run(run)
    job.start()
    select_model(live_option_id(run))
    return run


def start_run(task: Task, model_cfg: ModelConfig, train_cfg: TrainConfig, *, max_seconds: float, probe: str,
              probe_every: int, n_train: int | None = None, processes: int = 1,
              stage_rule: CleanRule | None = None) -> LiveRun:
    """Check the caps, then train a new model on a background job; raises ConfigError or BusyError. With a
    stage rule (the stage demo) the run stops as soon as its picture is clean."""
    check_limits(model_cfg, train_cfg, max_seconds=max_seconds, n_train=n_train)
    _check_probe(probe, probe_every)
    if stage_rule is not None and processes != 1:
        raise ConfigError("The stage demo trains on one process; set Processes to 1.")
    trainer = Trainer(task, model_cfg, train_cfg, callbacks=[StopWhenClean(stage_rule)] if stage_rule else ())
    return _launch(trainer, target_steps=train_cfg.max_steps, max_seconds=max_seconds, probe=probe,
                   probe_every=probe_every, processes=processes)


def resume_target(run: LiveRun, more_steps: int) -> int:
    """Where Resume trains to: the unfinished step target, else `more_steps` further."""
    step = run.trainer.step
    return run.job.max_steps if step < run.job.max_steps else step + more_steps


def resume_run(run: LiveRun, more_steps: int, max_seconds: float | None = None) -> None:
    """Train the same model further on a new job (optimizer, schedule and history carry on) with a new time
    budget of `max_seconds` (default: the run's own); another session may be watching the same run."""
    max_seconds = run.max_seconds if max_seconds is None else float(max_seconds)
    if not 0 < max_seconds <= LIMITS.max_seconds:
        raise ConfigError(f"The time budget is {max_seconds:,.0f} s; this app allows 1 to {LIMITS.max_seconds:,.0f} s.")
    with run.lock:  # two sessions watching one run: one training process per run
        if run.active:
            raise BusyError("The run is already training.")
        target = resume_target(run, more_steps)
        if target > LIMITS.max_steps:
            raise ConfigError(f"Resuming to step {target:,} passes this app's cap of {LIMITS.max_steps:,} steps.")
        job = new_job(run.trainer, target_steps=target, max_seconds=max_seconds, probe=run.probe,
                      probe_every=run.probe_every, processes=run.job.processes)
        attach_callbacks(run, job)
        run.max_seconds = max_seconds
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
    trainer = trainer_from_checkpoint(ckpt)
    return _launch(trainer, target_steps=target, max_seconds=max_seconds, probe=probe, probe_every=probe_every,
                   earlier_frames=ckpt.frames)


def change_probe(run: LiveRun, probe: str) -> None:
    """Record a different probe sentence from now on (earlier snapshots keep their own tokens)."""
    probe = probe.strip()
    _check_probe(probe, run.probe_every)
    task = run.trainer.task
    _, model = run.job.latest_model()
    encode_source(model, task.src_tokenizer, probe)  # raises InputError for text the model cannot read
    run.probe = probe
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
        ckpt = checkpoint_from_trainer(run.trainer, run.timeline())
    try:
        path = save_checkpoint(ckpt, root / name.strip(), overwrite=overwrite)
    except CheckpointError as exc:  # the message names the run, not where the server keeps runs
        raise CheckpointError(str(exc).replace(f"{root}{os.sep}", "")) from None
    run.saved_as = path.name
    return path


def live_checkpoint(run: LiveRun) -> Checkpoint:
    """The run as a checkpoint with its probe frames: exact (with optimizer) when stopped, else the newest weights
    snapshot."""
    if not run.active:
        return checkpoint_from_trainer(run.trainer, run.timeline())
    _, model = run.job.latest_model()
    snap = run.job.snapshot()
    trainer, task = run.trainer, run.trainer.task
    return Checkpoint(model, trainer.model_cfg, trainer.cfg, task.src_tokenizer, task.tgt_tokenizer, dict(task.spec),
                      snap.step, snap.elapsed, dict(snap.evals[-1]) if snap.evals else {},
                      [dict(r) for r in snap.history], [dict(r) for r in snap.evals], frames=run.timeline())
