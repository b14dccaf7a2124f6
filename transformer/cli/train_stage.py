"""`train --stage`: the stage demo's recipe and stopping rule for `reverse` and `toy-en-de` (docs/training.md)."""
from __future__ import annotations

import argparse
from typing import Any

from ..data import Task
from ..model import STAGE_RECIPES, CleanRule, ModelConfig, TrainConfig, stage_configs
from .common import UsageError


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
