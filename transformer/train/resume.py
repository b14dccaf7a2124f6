"""Training <-> checkpoints: snapshot a Trainer as a Checkpoint, and resume a Trainer from one."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import torch

from ..data import Task
from ..decode import AttentionTrace
from ..model import TrainConfig, build_model, make_optimizer
from ..store import Checkpoint, task_for_checkpoint
from .device import cpu_copy
from .trainer import Callback, Trainer


def checkpoint_from_trainer(trainer: Trainer, frames: Sequence[tuple[int, AttentionTrace]] = ()) -> Checkpoint:
    """Snapshot a trainer (weights and optimizer copied to the CPU), unaffected by later training; call between
    steps. `frames`: the probe's (step, trace) recorded while training, saved beside the weights."""
    model = build_model(trainer.model_cfg)
    model.load_state_dict(cpu_copy(trainer.model.state_dict()))
    model.eval()
    task = trainer.task
    return Checkpoint(model, trainer.model_cfg, trainer.cfg, task.src_tokenizer, task.tgt_tokenizer,
                      dict(task.spec), trainer.step, trainer.elapsed,
                      dict(trainer.evals[-1]) if trainer.evals else {}, [dict(r) for r in trainer.history],
                      [dict(r) for r in trainer.evals], cpu_copy(trainer.optimizer.state_dict()),
                      frames=list(frames))


def trainer_from_checkpoint(ckpt: Checkpoint, task: Task | None = None, *, train_config: TrainConfig | None = None,
                            callbacks: Sequence[Callback] = (), device: torch.device | str = "cpu") -> Trainer:
    """A Trainer resuming from `ckpt` on `device`: weights, optimizer moments, step (hence LR schedule), time,
    history."""
    if task is None:
        task = task_for_checkpoint(ckpt)
    else:
        task = replace(task, src_tokenizer=ckpt.src_tokenizer, tgt_tokenizer=ckpt.tgt_tokenizer)
    cfg = train_config or ckpt.train_config
    model = build_model(ckpt.model_config)
    model.load_state_dict(cpu_copy(ckpt.model.state_dict()))
    optimizer_state = None
    if ckpt.optimizer_state is not None:
        # Hyperparameters (betas, weight decay) come from `cfg`; the saved state supplies only the moments.
        fresh = make_optimizer(model, cfg).state_dict()["param_groups"]
        groups = [{**new, "params": old["params"]} for new, old in zip(fresh, ckpt.optimizer_state["param_groups"])]
        optimizer_state = {"state": cpu_copy(ckpt.optimizer_state["state"]), "param_groups": groups}
    return Trainer(task, ckpt.model_config, cfg, model=model, step=ckpt.step, elapsed=ckpt.elapsed,
                   optimizer_state=optimizer_state, history=ckpt.history, evals=ckpt.evals, callbacks=callbacks,
                   device=device)
