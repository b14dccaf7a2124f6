"""The train stage: the Trainer, resuming from checkpoints, the app's training processes (jobs), and the runs
the server owns (registry, autosaves)."""
from .autosave import AUTOSAVE_EVERY_S, AUTOSAVE_PREFIX, MAX_AUTOSAVES, autosave, autosave_name, prune_autosaves
from .jobs import MAX_CONCURRENT_JOBS, JobSnapshot, TrainingJob, fork_server, running_jobs
from .resume import checkpoint_from_trainer, trainer_from_checkpoint
from .runs import KEEP_ENDED_RUNS, LiveRun, RunRegistry, registry
from .trainer import Callback, NonFiniteLossError, StepStats, Trainer, evaluate_model, lr_at

__all__ = ["AUTOSAVE_EVERY_S", "AUTOSAVE_PREFIX", "Callback", "JobSnapshot", "KEEP_ENDED_RUNS", "LiveRun",
           "MAX_AUTOSAVES", "MAX_CONCURRENT_JOBS", "NonFiniteLossError", "RunRegistry", "StepStats", "Trainer",
           "TrainingJob", "autosave", "autosave_name", "checkpoint_from_trainer", "evaluate_model", "fork_server",
           "lr_at", "prune_autosaves", "registry", "running_jobs", "trainer_from_checkpoint"]
