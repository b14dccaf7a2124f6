"""The train stage: the Trainer, resuming from checkpoints, the app's training processes (jobs), and the runs
the server owns (plain records between jobs, autosaves)."""
from .autosave import CheckpointEvery, SnapshotEvery
from .best import KEEP_BEST, KeepBest
from .device import DEVICES, DeviceError, backend_for, cuda_devices, resolve_device
from .distributed import (
    DistEnv,
    DistributedTrainer,
    PeerLostError,
    available_cores,
    start_process_group,
    stop_process_group,
    threads_per_rank,
    torchrun_env,
)
from .job_plan import JobPlan, RunRecord, model_from_weights
from .job_slots import TrainingSlots, training_slots
from .job_supervisor import MAX_CONCURRENT_JOBS, JobSnapshot, TrainingJob, fork_server, running_jobs
from .precision import PRECISIONS, cpu_supports_bf16, resolve_precision
from .probe import PROBE_FRAMES, ProbeRecorder, probe_trace
from .resume import checkpoint_from_state, checkpoint_from_trainer, record_from_checkpoint, trainer_from_checkpoint
from .run_autosave import (
    AUTOSAVE_EVERY_S,
    AUTOSAVE_PREFIX,
    MAX_AUTOSAVES,
    autosave,
    autosave_name,
    keep_snapshot,
    prune_autosaves,
    run_checkpoint,
)
from .runs import KEEP_ENDED_RUNS, LiveRun, ServerRuns, server_runs
from .stage import CLEAN, StopWhenClean
from .trainer import Callback, NonFiniteLossError, StepStats, Trainer, evaluate_model, lr_at

__all__ = ["AUTOSAVE_EVERY_S", "AUTOSAVE_PREFIX", "CLEAN", "DEVICES", "KEEP_BEST", "KEEP_ENDED_RUNS", "MAX_AUTOSAVES",
           "MAX_CONCURRENT_JOBS", "PRECISIONS", "PROBE_FRAMES", "Callback", "CheckpointEvery", "DeviceError", "DistEnv",
           "DistributedTrainer", "JobPlan", "JobSnapshot", "KeepBest", "LiveRun", "NonFiniteLossError", "PeerLostError",
           "ProbeRecorder", "RunRecord", "ServerRuns", "SnapshotEvery", "StepStats", "StopWhenClean", "Trainer",
           "TrainingJob", "TrainingSlots", "autosave", "autosave_name", "available_cores", "backend_for",
           "checkpoint_from_state", "checkpoint_from_trainer", "cpu_supports_bf16", "cuda_devices", "evaluate_model",
           "fork_server", "keep_snapshot", "lr_at", "model_from_weights", "probe_trace", "prune_autosaves",
           "record_from_checkpoint", "resolve_device", "resolve_precision", "run_checkpoint", "running_jobs",
           "server_runs", "start_process_group", "stop_process_group", "threads_per_rank", "torchrun_env",
           "trainer_from_checkpoint", "training_slots"]
