"""`train --stage`: the stage demo's recipe and stopping rule for `reverse` and `toy-en-de` (docs/training.md)."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from ..data import Task
from ..model import STAGE_RECIPES, CleanRule, ModelConfig, TrainConfig, stage_configs
from ..train import available_cores, cuda_devices
from .common import UsageError

ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the package, for the launched processes


def check_stage(args: argparse.Namespace) -> None:
    """UsageError for --stage with what it cannot go with; nothing without --stage."""
    if not getattr(args, "stage", False):
        return
    if args.resume:
        raise UsageError("--stage starts a new run; drop --resume (or --stage)")
    if args.task is not None and args.task not in STAGE_RECIPES:
        raise UsageError(f"--stage is for --task {' or '.join(STAGE_RECIPES)}, not {args.task}")
    if getattr(args, "architecture", None) == "encoder-only":
        raise UsageError("--stage's picture is cross-attention: it trains an encoder-decoder, not encoder-only")
    if args.preset:
        raise UsageError("--stage is a recipe of its own, sizes included; drop --preset (or --stage)")


def stage_trainer_configs(task: Task, model_overrides: dict[str, Any], train_overrides: dict[str, Any],
                          processes: int = 1) -> tuple[ModelConfig, TrainConfig, CleanRule]:
    """The stage recipe's configs for a task on `processes` processes (the recipe's batch split between them),
    the flags over them, and its stopping rule."""
    return stage_configs(task.name, task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                         model_overrides, train_overrides, processes)


def stage_hint(task_name: str, processes: int, cores: int) -> str | None:
    """A line for a one-process `train --stage` whose recipe steps faster on the machine's cores as several
    processes (the same steps and picture, less time a step); None when it already runs so."""
    wanted = min(STAGE_RECIPES[task_name].processes, cores)
    if processes >= wanted:
        return None
    return (f"note: on {cores} cores the stage demo trains faster as {wanted} processes (the same steps): "
            f"torchrun --standalone --nproc-per-node {wanted} -m transformer train --task {task_name} --stage ...")


def stage_processes(args: argparse.Namespace) -> int:
    """How many processes a new `train --stage` on the CPU launches itself (the recipe's, at most the machine's
    cores); 1, train in this process, otherwise (no --stage, --resume, a GPU, no task named)."""
    if not getattr(args, "stage", False) or args.resume or args.task not in STAGE_RECIPES:
        return 1
    if args.device == "cuda" or (args.device == "auto" and cuda_devices() > 0):
        return 1
    return max(1, min(STAGE_RECIPES[args.task].processes, available_cores()))


def launch_stage(argv: Sequence[str], processes: int) -> int:
    """Run this same `train` command as `processes` processes (torch.distributed.run, standalone, one thread each
    unless OMP_NUM_THREADS says otherwise); returns their exit status. Ctrl-C reaches them all: they stop and save."""
    print(f"stage demo: training as {processes} processes, the recipe's (torchrun --standalone --nproc-per-node "
          f"{processes})", file=sys.stderr, flush=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
           "-m", "transformer", *argv]
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    with subprocess.Popen(cmd, env=env) as proc:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # the processes got it too (one process group): they stop and save
            return proc.wait()
