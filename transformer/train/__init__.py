"""The train stage: the Trainer, resuming from checkpoints, and the app's training processes (jobs)."""
from .jobs import MAX_CONCURRENT_JOBS, JobSnapshot, TrainingJob, fork_server, running_jobs
from .resume import checkpoint_from_trainer, trainer_from_checkpoint
from .trainer import Callback, NonFiniteLossError, StepStats, Trainer, evaluate_model, lr_at

__all__ = ["Callback", "JobSnapshot", "MAX_CONCURRENT_JOBS", "NonFiniteLossError", "StepStats", "Trainer",
           "TrainingJob", "checkpoint_from_trainer", "evaluate_model", "fork_server", "lr_at", "running_jobs",
           "trainer_from_checkpoint"]
