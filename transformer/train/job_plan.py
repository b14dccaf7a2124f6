"""What a training job is asked to do (`JobPlan`) and where a run's training stands in the server (`RunRecord`).

The plan is fixed when a job is asked for (the Train form, Resume, Continue) and travels whole to the training
process; the record is plain data the server keeps between jobs. Only the training process has a `Trainer`: the
server never trains, mirrors a trainer or rolls one back. A job adds its steps to the record when its process hands
back the training state; a job whose process died without one leaves the record as it was.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..data import Task
from ..model import CleanRule, ModelConfig, Network, TrainConfig, build_model, make_optimizer
from .device import cpu_copy


@dataclass(frozen=True, kw_only=True)
class JobPlan:
    """One training job, from the form that asked for it to the process that trains: what to train (the task with
    its data and TaskSpec, the model config with its architecture, the train config with its seed), how far (the
    step target, this job's time budget, the stage demo's stop rule) and how (processes, threads, the probe,
    how often to report)."""

    task: Task
    model_cfg: ModelConfig
    train_cfg: TrainConfig
    max_steps: int  # train up to this step (the run's step, not this job's count)
    max_seconds: float | None = None  # this job's time budget, counted from its start
    stop_rule: CleanRule | None = None  # the stage demo: stop as soon as the picture is clean (`stage.StopWhenClean`)
    processes: int = 1  # data-parallel processes on this machine (see job_ranks)
    threads: int = 0  # intra-op threads of the job, split among its processes (0: torch's default)
    probe: str | None = None  # the sentence decoded every `probe_every` steps
    probe_every: int = 50
    probe_frames: int = 0  # aim for about this many probe recordings over the budget (0: only probe_every)
    publish_every_s: float = 1.0  # send the newest weights this often
    autosave_every_s: float | None = None  # send the full training state this often (the server autosaves it)
    snapshot_every: int | None = None  # send the state every N steps too, kept as a weight snapshot (the Train page)

    def __post_init__(self) -> None:
        object.__setattr__(self, "probe_every", max(1, int(self.probe_every)))


@dataclass(eq=False)
class RunRecord:
    """Where a run's training stands, as the server knows it: plain data, no model or optimizer object.

    `state` is `Trainer.state()` (weights, optimizer moments, step, training seconds) as the last job handed it
    back, or the untrained start; the next job starts from it. `history` and `evals` are the rows of every job so
    far. Only a job that ended with the training state changes the record (`TrainingJob` commits it)."""

    state: dict[str, Any]
    history: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)

    @property
    def step(self) -> int:
        return int(self.state["step"])

    @property
    def elapsed(self) -> float:
        """Training seconds of the run so far (all its jobs)."""
        return float(self.state["elapsed"])

    @classmethod
    def fresh(cls, plan: JobPlan) -> "RunRecord":
        """An untrained run: the weights a `Trainer` starts from (the train config's seed; this process's random
        state is left as it was) and an optimizer with no moments yet."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(plan.train_cfg.seed)
            model = build_model(plan.model_cfg)
        optimizer = make_optimizer(model, plan.train_cfg)
        return cls(state={"model": cpu_copy(model.state_dict()), "optimizer": cpu_copy(optimizer.state_dict()),
                          "step": 0, "elapsed": 0.0})

    def model(self, model_cfg: ModelConfig) -> torch.nn.Module:
        """A new eval-mode model with the record's weights."""
        return model_from_weights(model_cfg, self.state["model"])


def model_from_weights(model_cfg: ModelConfig, state_dict: dict[str, Any]) -> Network:
    """A new eval-mode model of `model_cfg` holding `state_dict`."""
    model = build_model(model_cfg)
    model.load_state_dict(state_dict)
    return model.eval()
