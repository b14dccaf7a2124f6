"""App-level caps on training requests, checked on the server before a job starts (widget ranges are not enough)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from transformer.model import ConfigError, ModelConfig, TrainConfig, build_model


@dataclass(frozen=True)
class AppLimits:
    """The largest training run one browser session may start."""

    max_seconds: float = 600.0
    max_steps: int = 50_000
    max_d_model: int = 512
    max_heads: int = 16
    max_layers: int = 6
    max_d_ff: int = 2048
    max_len: int = 256
    max_batch_size: int = 512
    max_n_train: int = 200_000
    max_eval_examples: int = 2_000
    max_corpus_pairs: int = 100_000
    max_typed_corpus_chars: int = 2_000_000  # the text area; larger corpora come as files
    max_parameters: int = 100_000_000  # a large corpus vocabulary can make even a modest d_model huge
    max_probe_chars: int = 200
    min_probe_every: int = 5


LIMITS = AppLimits()


def parameter_count(model_cfg: ModelConfig) -> int:
    """Parameters of the model a config describes, counted without allocating its weights."""
    with torch.device("meta"):
        return build_model(model_cfg).num_parameters()  # the architecture the config names


def limit_violations(model_cfg: ModelConfig, train_cfg: TrainConfig, *, max_seconds: float | None,
                     n_train: int | None = None, limits: AppLimits = LIMITS) -> list[str]:
    """Every way a request exceeds the app caps, as messages (empty when it fits)."""
    checks = [
        ("d_model", model_cfg.d_model, limits.max_d_model),
        ("heads", model_cfg.n_heads, limits.max_heads),
        ("encoder layers", model_cfg.n_encoder_layers, limits.max_layers),
        ("decoder layers", model_cfg.n_decoder_layers, limits.max_layers),
        ("feed-forward size", model_cfg.d_ff, limits.max_d_ff),
        ("max length", model_cfg.max_len, limits.max_len),
        ("batch size", train_cfg.batch_size, limits.max_batch_size),
        ("training steps", train_cfg.max_steps, limits.max_steps),
        ("evaluation examples", train_cfg.eval_examples, limits.max_eval_examples),
        ("parameters", parameter_count(model_cfg), limits.max_parameters),
    ]
    if n_train is not None:
        checks.append(("training examples", n_train, limits.max_n_train))
    problems = [f"{name} is {value:,}; this app allows at most {cap:,}" for name, value, cap in checks if value > cap]
    if max_seconds is None:
        problems.append(f"a time budget is required (at most {limits.max_seconds:,.0f} s)")
    elif not 0 < max_seconds <= limits.max_seconds:
        problems.append(f"time budget is {max_seconds:,.0f} s; this app allows 1 to {limits.max_seconds:,.0f} s")
    return problems


def check_limits(model_cfg: ModelConfig, train_cfg: TrainConfig, *, max_seconds: float | None,
                 n_train: int | None = None, limits: AppLimits = LIMITS) -> None:
    """Raise ConfigError naming every cap the request exceeds."""
    problems = limit_violations(model_cfg, train_cfg, max_seconds=max_seconds, n_train=n_train, limits=limits)
    if problems:
        raise ConfigError("This run is too large for the app: " + "; ".join(problems) + ".")
