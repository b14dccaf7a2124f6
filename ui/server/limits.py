"""App-level caps on training requests, checked on the server before a job starts (widget ranges are not enough).

The longest sentence is the architecture's to say: a table of positions (sinusoidal) stops at `max_len`, 256 in the
app; the decoder-only architecture with rope positions has no table and reads up to 131,072 tokens, bounded then by
the memory a batch of that length takes in training (estimated, shown on the form, refused past the machine's)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from transformer.model import ConfigError, ModelConfig, TrainConfig, build_model, shapes_only


@dataclass(frozen=True)
class AppLimits:
    """The largest training run one browser session may start."""

    max_seconds: float = 600.0
    max_steps: int = 50_000
    max_d_model: int = 512
    max_heads: int = 16
    max_layers: int = 6
    max_d_ff: int = 2048
    max_len: int = 256  # with a table of positions (sinusoidal)
    max_rope_len: int = 131_072  # decoder-only with rope: no table (ModelConfig's own bound)
    max_batch_size: int = 512
    max_n_train: int = 200_000
    max_eval_examples: int = 2_000
    max_corpus_pairs: int = 100_000
    max_typed_corpus_chars: int = 2_000_000  # the text area; larger corpora come as files
    max_parameters: int = 100_000_000  # a large corpus vocabulary can make even a modest d_model huge
    max_probe_chars: int = 200
    min_probe_every: int = 5


LIMITS = AppLimits()
BYTES_PER_ACTIVATION = 4 * 14  # float32; per token, layer and width unit: the block's kept activations, roughly


def length_cap(architecture: str, positions: str, limits: AppLimits = LIMITS) -> int:
    """The longest sentence the app lets an architecture and position scheme train on."""
    return limits.max_rope_len if architecture == "decoder-only" and positions == "rope" else limits.max_len


def length_problem(architecture: str, positions: str, max_len: int, limits: AppLimits = LIMITS) -> str | None:
    """Why `max_len` is refused for this architecture and position scheme (one line), or None."""
    cap = length_cap(architecture, positions, limits)
    if 2 <= max_len <= cap:
        return None
    if max_len < 2:
        return f"max length is {max_len:,}; a sentence needs at least 2 positions"
    if cap == limits.max_rope_len:
        return (f"max length is {max_len:,}; the decoder-only architecture with rope positions reads at most "
                f"{cap:,} tokens")
    return (f"max length is {max_len:,}; this app allows at most {cap:,} with {positions} positions (the "
            f"decoder-only architecture with rope positions reads up to {limits.max_rope_len:,})")


def training_memory(model_cfg: ModelConfig, batch_size: int, n_parameters: int | None = None) -> int:
    """Bytes a training step takes at most, roughly: the weights, their gradients and Adam's two moments (4 x the
    parameters in float32), and a batch of `batch_size` sentences of `max_len` tokens (each layer's kept
    activations and the logits; attention runs the fused kernel, so nothing n x n is kept)."""
    params = parameter_count(model_cfg) if n_parameters is None else n_parameters
    layers = model_cfg.n_encoder_layers + model_cfg.n_decoder_layers
    tokens = batch_size * model_cfg.max_len * (2 if model_cfg.architecture == "decoder-only" else 1)  # src + tgt
    width = model_cfg.d_model + model_cfg.d_ff // 4
    logits = tokens * model_cfg.tgt_vocab_size * 4 * 3  # the logits, their softmax and its gradient
    return 16 * params + tokens * layers * width * BYTES_PER_ACTIVATION + logits


def free_memory() -> int:
    """Bytes of memory the machine has free (available pages), or a large number where it cannot say."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def memory_problem(model_cfg: ModelConfig, batch_size: int, n_parameters: int | None = None) -> str | None:
    """Why a training step of this size would not fit the machine's free memory (one line), or None."""
    need, free = training_memory(model_cfg, batch_size, n_parameters), free_memory()
    if need <= free:
        return None
    return (f"a batch of {batch_size:,} sentences of {model_cfg.max_len:,} tokens needs about {need / 2**30:,.1f} GB "
            f"in training; this machine has {free / 2**30:,.1f} GB free (lower the batch size or the max length)")


def parameter_count(model_cfg: ModelConfig) -> int:
    """Parameters of the model a config describes, counted without allocating its weights."""
    with shapes_only():
        return build_model(model_cfg).num_parameters()  # the architecture the config names


def limit_violations(model_cfg: ModelConfig, train_cfg: TrainConfig, *, max_seconds: float | None,
                     n_train: int | None = None, limits: AppLimits = LIMITS) -> list[str]:
    """Every way a request exceeds the app caps, as messages (empty when it fits)."""
    n_parameters = parameter_count(model_cfg)
    checks = [
        ("d_model", model_cfg.d_model, limits.max_d_model),
        ("heads", model_cfg.n_heads, limits.max_heads),
        ("encoder layers", model_cfg.n_encoder_layers, limits.max_layers),
        ("decoder layers", model_cfg.n_decoder_layers, limits.max_layers),
        ("feed-forward size", model_cfg.d_ff, limits.max_d_ff),
        ("batch size", train_cfg.batch_size, limits.max_batch_size),
        ("training steps", train_cfg.max_steps, limits.max_steps),
        ("evaluation examples", train_cfg.eval_examples, limits.max_eval_examples),
        ("parameters", n_parameters, limits.max_parameters),
    ]
    if n_train is not None:
        checks.append(("training examples", n_train, limits.max_n_train))
    problems = [f"{name} is {value:,}; this app allows at most {cap:,}" for name, value, cap in checks if value > cap]
    too_long = length_problem(model_cfg.architecture, model_cfg.positions, model_cfg.max_len, limits)
    problems += [too_long] if too_long else []
    too_big = None if too_long else memory_problem(model_cfg, train_cfg.batch_size, n_parameters)
    problems += [too_big] if too_big else []
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
