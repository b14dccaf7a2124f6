"""The train stage: the Trainer, resuming from checkpoints, and the app's training processes (jobs)."""
from .best import KEEP_BEST, KeepBest
from .jobs import MAX_CONCURRENT_JOBS, JobSnapshot, TrainingJob, fork_server, running_jobs
from .resume import checkpoint_from_trainer, trainer_from_checkpoint
from .precision import PRECISIONS, cpu_supports_bf16, resolve_precision
from .trainer import Callback, NonFiniteLossError, StepStats, Trainer, evaluate_model, lr_at

__all__ = ["KEEP_BEST", "KeepBest", "PRECISIONS", "cpu_supports_bf16", "resolve_precision", "Callback", "JobSnapshot", "MAX_CONCURRENT_JOBS", "NonFiniteLossError", "StepStats", "Trainer",
           "TrainingJob", "checkpoint_from_trainer", "evaluate_model", "fork_server", "lr_at", "running_jobs",
           "trainer_from_checkpoint"]
