"""What a training job occupies on the server (processes, threads, slot) and what a waiting job waits for."""
from __future__ import annotations

import torch

from transformer.train import MAX_CONCURRENT_JOBS, TrainingJob, threads_per_rank, training_slots


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def job_layout(job: TrainingJob) -> str:
    """E.g. "Trains on 2 processes × 1 thread each (copies of the model that average their gradients …); …"
    (PyTorch's DistributedDataParallel over gloo)."""
    plan = job.plan
    threads, processes = plan.threads or torch.get_num_threads(), plan.processes
    batch = plan.train_cfg.batch_size
    if processes <= 1:
        return f"Trains on 1 process × {_plural(threads, 'thread')} on the CPU; a step sees {batch:,} examples."
    each = threads_per_rank(processes, threads)
    return (f"Trains on {processes} processes × {_plural(each, 'thread')} each (copies of the model that average "
            f"their gradients every step, on the CPU); a step sees {batch:,} × {processes} = {batch * processes:,} "
            "examples.")


def waiting_reason(job: TrainingJob) -> str:
    """Why a job has not started yet, and what has to end before it does."""
    jobs, processes = training_slots.usage()
    need = training_slots.need(job.plan.processes)
    verb = "uses" if jobs == 1 else "use"
    return (f"Waiting: {_plural(jobs, 'training run')} {verb} {processes} of the {training_slots.max_processes} "
            f"training processes this server runs at once (one per core, at most {MAX_CONCURRENT_JOBS} runs). This "
            f"run needs {_plural(need, 'process')} and starts as soon as that many are free, after any run that "
            f"asked before it ({training_slots.waiting()} waiting, this one included).")
