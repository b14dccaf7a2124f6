"""The train stage: the Trainer, resuming from checkpoints, and the app's training processes (jobs)."""
from .best import KEEP_BEST, KeepBest
from .autosave import CheckpointEvery
from .distributed import (
    DistEnv,
    DistributedTrainer,
    PeerLostError,
    start_process_group,
    stop_process_group,
    threads_per_rank,
    torchrun_env,
)
from .jobs import MAX_CONCURRENT_JOBS, JobSnapshot, TrainingJob, fork_server, running_jobs
from .resume import checkpoint_from_trainer, trainer_from_checkpoint
from .precision import PRECISIONS, cpu_supports_bf16, resolve_precision
from .trainer import Callback, NonFiniteLossError, StepStats, Trainer, evaluate_model, lr_at

__all__ = ["Callback", "CheckpointEvery", "DistEnv", "DistributedTrainer", "JobSnapshot", "KEEP_BEST", "KeepBest",
           "MAX_CONCURRENT_JOBS", "NonFiniteLossError", "PRECISIONS", "PeerLostError", "StepStats", "Trainer",
           "TrainingJob", "checkpoint_from_trainer", "cpu_supports_bf16", "evaluate_model", "fork_server", "lr_at",
           "resolve_precision", "running_jobs", "start_process_group", "stop_process_group", "threads_per_rank",
           "torchrun_env", "trainer_from_checkpoint"]
