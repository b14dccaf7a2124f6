"""The stage demo: a recipe per task that draws a clean attention picture in seconds, and the rule that says when.

A recipe is sizes and training settings like a preset, plus a `CleanRule`: training stops as soon as the
validation exact match and the best cross-attention head's alignment with the gold alignment pass their
thresholds, or at a generous time cap. The schedule counts steps, not seconds, so a slower or busier machine
reaches the same picture later instead of stopping with a blurred one. Nothing in a recipe draws the answer into
the weights: sizes, schedule, batch and initialisation are generic, and the picture is learned from the data.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .config import ConfigError, ModelConfig, TrainConfig, default_configs


@dataclass(frozen=True)
class CleanRule:
    """When the picture is clean: exact match and the best head's alignment at least these, checked on
    `eval_examples` validation examples every `check_every` steps once the training batches' token accuracy
    (mean of the last `check_every` steps) reaches `gate_accuracy`, and a check that passes confirmed on
    `confirm_examples` (or every validation example, if fewer); at most `max_seconds` of training."""

    min_exact_match: float = 0.99
    min_alignment: float = 0.9
    max_seconds: float = 120.0
    check_every: int = 25
    gate_accuracy: float = 0.99
    eval_examples: int = 200
    confirm_examples: int = 500

    def met(self, metrics: dict[str, Any]) -> bool:
        """True when an evaluation's exact match and best head alignment pass the thresholds."""
        aligned = (metrics.get("alignment") or {}).get("best")
        return (metrics.get("exact_match", 0.0) >= self.min_exact_match
                and aligned is not None and aligned >= self.min_alignment)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class StageRecipe:
    """A task's stage demo: model sizes, training settings (over the task's defaults) and the stopping rule."""

    task: str
    model: dict[str, Any]
    train: dict[str, Any]
    rule: CleanRule
    summary: str  # one line for the page and the CLI
    processes: int = 1  # local processes it trains fastest on (DDP, the global batch split); fewer give the same steps


def batch_per_process(global_batch: int, processes: int) -> int:
    """The per-process batch of a global batch split over `processes` (at least 1 each)."""
    return max(1, global_batch // max(processes, 1))


STAGE_RECIPES: dict[str, StageRecipe] = {
    # One head per attention (the best head is the picture, so the whole cross-attention is one head), two encoder
    # layers (a source has no end token, so the encoder must work out each letter's place from the end: one layer
    # plateaued at 0.97-0.985 exact match), a feed-forward of twice the width (a cheap step), a high peak learning
    # rate with a short warm-up and a cosine decay over the steps a clean picture takes, then the final rate until
    # it is clean. A global batch of 128: clean at 475-500 steps in 5 of 5 seeds, where a batch of 64 took 500-1,200
    # (bench/quality/stage_sweep.py); on 2 cores it trains as 2 processes x 64 (DDP, one thread each), which steps
    # faster than one process x 2 threads (docs/training.md, "The stage demo").
    "reverse": StageRecipe(
        task="reverse",
        model=dict(d_model=64, n_heads=1, n_encoder_layers=2, n_decoder_layers=1, d_ff=128, dropout=0.0,
                   max_len=64),
        train=dict(batch_size=128, lr=1e-2, betas=(0.9, 0.98), weight_decay=0.0, warmup_steps=30,
                   schedule="cosine", min_lr_ratio=0.05, decay_steps=500, grad_clip=1.0, max_steps=5000,
                   eval_every=10**6, eval_examples=200),
        rule=CleanRule(min_exact_match=0.99, min_alignment=0.9, max_seconds=300.0),
        summary="one head, two encoder layers and one decoder layer of width 64, batch 128, learning rate 0.01 "
                "decaying over 500 steps; stops when 99 % of held-out strings come out right and one "
                "cross-attention head is 90 % on the anti-diagonal",
        processes=2,
    ),
    "toy-en-de": StageRecipe(
        task="toy-en-de",
        model=dict(d_model=128, n_heads=1, n_encoder_layers=1, n_decoder_layers=1, d_ff=128, dropout=0.0,
                   max_len=48),
        train=dict(batch_size=64, lr=5e-3, weight_decay=0.0, warmup_steps=50, schedule="cosine",
                   min_lr_ratio=0.05, decay_steps=1000, grad_clip=1.0, max_steps=5000, eval_every=10**6,
                   eval_examples=200),
        rule=CleanRule(min_exact_match=0.5, min_alignment=0.9, max_seconds=300.0, check_every=50,
                       gate_accuracy=0.85),
        summary="one head, one layer each side, learning rate 0.005 decaying over 1,000 steps; stops when one "
                "cross-attention head is 90 % on the gold word alignment and half the held-out sentences come out "
                "right",
    ),
}


def stage_recipe(task: str) -> StageRecipe:
    """The stage recipe of a task; ConfigError for a task without one."""
    if task not in STAGE_RECIPES:
        raise ConfigError(f"the stage demo is for {' and '.join(STAGE_RECIPES)}, not {task}")
    return STAGE_RECIPES[task]


def stage_configs(task: str, src_vocab_size: int, tgt_vocab_size: int,
                  model_overrides: dict[str, Any] | None = None,
                  train_overrides: dict[str, Any] | None = None,
                  processes: int = 1) -> tuple[ModelConfig, TrainConfig, CleanRule]:
    """Model and training configs of a task's stage demo (the task's defaults, the recipe, then overrides) and
    its stopping rule; the time budget is the rule's cap. On `processes` processes the recipe's batch (the global
    batch) is split between them; an overriding batch_size is per process."""
    recipe = stage_recipe(task)
    train = {**recipe.train, "batch_size": batch_per_process(recipe.train["batch_size"], processes),
             "max_seconds": recipe.rule.max_seconds, **(train_overrides or {})}
    model_cfg, train_cfg = default_configs(task, src_vocab_size, tgt_vocab_size,
                                           model_overrides={**recipe.model, **(model_overrides or {})},
                                           train_overrides=train)
    return model_cfg, train_cfg, recipe.rule
