"""The train stage: the Trainer, resuming from checkpoints, the app's training processes (jobs), and the runs
the server owns (registry, autosaves)."""
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
from .run_autosave import AUTOSAVE_EVERY_S, AUTOSAVE_PREFIX, MAX_AUTOSAVES, autosave, autosave_name, prune_autosaves
from .runs import KEEP_ENDED_RUNS, LiveRun, RunRegistry, registry
from .trainer import Callback, NonFiniteLossError, StepStats, Trainer, evaluate_model, lr_at

__all__ = ["AUTOSAVE_EVERY_S", "AUTOSAVE_PREFIX", "Callback", "CheckpointEvery", "DistEnv", "DistributedTrainer",
           "JobSnapshot", "KEEP_ENDED_RUNS", "LiveRun", "MAX_AUTOSAVES", "MAX_CONCURRENT_JOBS", "NonFiniteLossError",
           "PeerLostError", "RunRegistry", "StepStats", "Trainer", "TrainingJob", "autosave", "autosave_name",
           "checkpoint_from_trainer", "evaluate_model", "fork_server", "lr_at", "prune_autosaves", "registry",
           "running_jobs", "start_process_group", "stop_process_group", "threads_per_rank", "torchrun_env",
           "trainer_from_checkpoint"]
