"""Training <-> checkpoints: snapshot a Trainer or a run's record as a Checkpoint, and resume either from one."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import torch

from ..data import Task
from ..decode import AttentionTrace
from ..model import ModelConfig, TrainConfig, build_model, make_optimizer
from ..store import Checkpoint, task_for_checkpoint
from .device import cpu_copy
from .job_plan import RunRecord, model_from_weights
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
    return Trainer(task, ckpt.model_config, cfg, model=model, step=ckpt.step, elapsed=ckpt.elapsed,
                   optimizer_state=_optimizer_state(ckpt, cfg, model), history=ckpt.history, evals=ckpt.evals,
                   callbacks=callbacks, device=device)


def _optimizer_state(ckpt: Checkpoint, cfg: TrainConfig, model: torch.nn.Module) -> dict | None:
    """The checkpoint's optimizer moments with the hyperparameters (betas, weight decay) of `cfg`."""
    if ckpt.optimizer_state is None:
        return None
    fresh = make_optimizer(model, cfg).state_dict()["param_groups"]
    groups = [{**new, "params": old["params"]}
              for new, old in zip(fresh, ckpt.optimizer_state["param_groups"], strict=True)]
    return {"state": cpu_copy(ckpt.optimizer_state["state"]), "param_groups": groups}


def record_from_checkpoint(ckpt: Checkpoint) -> RunRecord:
    """A run's record continuing `ckpt` (which must hold its optimizer state), as `trainer_from_checkpoint` would."""
    if ckpt.optimizer_state is None:
        raise ValueError("the checkpoint has no optimizer state to continue from")
    weights = cpu_copy(ckpt.model.state_dict())
    optimizer = _optimizer_state(ckpt, ckpt.train_config, model_from_weights(ckpt.model_config, weights))
    return RunRecord(state={"model": weights, "optimizer": optimizer, "step": ckpt.step, "elapsed": ckpt.elapsed},
                     history=[dict(r) for r in ckpt.history], evals=[dict(r) for r in ckpt.evals])


def checkpoint_from_state(task: Task, model_cfg: ModelConfig, train_cfg: TrainConfig, state: dict,
                          history: Sequence[dict], evals: Sequence[dict],
                          frames: Sequence[tuple[int, AttentionTrace]] = ()) -> Checkpoint:
    """A checkpoint from a training state (`Trainer.state()`: weights, optimizer, step, seconds) and the rows of
    history and evaluations up to its step (later ones are left out), with the probe frames up to it."""
    step = int(state["step"])
    return Checkpoint(model_from_weights(model_cfg, state["model"]), model_cfg, train_cfg, task.src_tokenizer,
                      task.tgt_tokenizer, dict(task.spec), step, float(state["elapsed"]),
                      dict(evals[-1]) if evals else {}, [dict(r) for r in history if r.get("step", 0) <= step],
                      [dict(r) for r in evals if r.get("step", 0) <= step], state["optimizer"],
                      frames=[(s, trace) for s, trace in frames if s <= step])
