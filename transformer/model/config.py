"""Frozen, validated configuration dataclasses for the model and for training."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# Server-side caps: a config past these is refused wherever it comes from (widget, CLI, checkpoint file).
MAX_D_MODEL = 1024
MAX_HEADS = 32
MAX_LAYERS = 12
MAX_D_FF = 8192
MAX_VOCAB = 200_000
MAX_LEN = 1024
MAX_ROPE_LEN = 131_072  # a decoder-only model with RoPE has no position table: it reads this far
MAX_BATCH = 4096
MAX_STEPS = 1_000_000
MAX_SECONDS = 24 * 3600.0


ARCHITECTURE_NAMES = ("encoder-decoder", "decoder-only", "encoder-only")
POSITION_SCHEMES = ("sinusoidal", "rope")  # a table added to the tokens, or queries and keys rotated (decoder-only)


class ConfigError(ValueError):
    """A configuration value a user supplied is invalid."""


def check_int(name: str, value: Any, low: int, high: int) -> None:
    """Raise ConfigError unless `value` is an int (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}")


def _check_float(name: str, value: Any, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    if not (low <= float(value) <= high):  # also rejects NaN
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}")


def _from_dict(cls, data: dict[str, Any]):
    if not isinstance(data, dict):
        raise ConfigError(f"{cls.__name__} must be a JSON object")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} field(s): {', '.join(sorted(unknown))}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    try:
        return cls(**values)
    except TypeError as exc:
        raise ConfigError(f"bad {cls.__name__}: {exc}") from None


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and options of the encoder-decoder transformer."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 128
    n_heads: int = 4
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int = 512
    dropout: float = 0.1
    max_len: int = 128
    norm: str = "pre"  # "pre" (Annotated Transformer) or "post" (the paper)
    pad_id: int = 0
    tie_embeddings: bool = False  # source, target embeddings and generator share one matrix (joint vocabulary)
    architecture: str = "encoder-decoder"  # or "decoder-only": one causal stack of n_decoder_layers (a prefix LM);
    # or "encoder-only": one bidirectional stack of n_encoder_layers with a masked-LM head (one joint vocabulary)
    positions: str = "sinusoidal"  # or "rope" (decoder-only): no table, so max_len up to MAX_ROPE_LEN
    rope_base: float = 10000.0  # RoPE's base (pair i turns at base^(-2i/Dh) per position); larger: slower pairs
    # Local and global layers (with RoPE): a local layer rotates and sees only the `window` latest positions (a
    # sliding window, |i - j| < window, as Mistral's); every `global_every`-th layer is global: it sees every position
    # and has no positions at all (NoPE), as Cohere's Command A and Llama 4 interleave them. 0: every layer global.
    window: int = 0
    global_every: int = 0
    # Log-n query scaling: a query that sees n keys is multiplied by max(1, ln n / ln logn_length), so its weights
    # stay as sharp past the trained length as within it (Qwen's logn attention; Nakanishi 2025's scalable softmax).
    logn_length: int = 0

    def __post_init__(self) -> None:
        check_int("src_vocab_size", self.src_vocab_size, 4, MAX_VOCAB)
        check_int("tgt_vocab_size", self.tgt_vocab_size, 4, MAX_VOCAB)
        check_int("d_model", self.d_model, 1, MAX_D_MODEL)
        check_int("n_heads", self.n_heads, 1, MAX_HEADS)
        check_int("n_encoder_layers", self.n_encoder_layers, 1, MAX_LAYERS)
        check_int("n_decoder_layers", self.n_decoder_layers, 1, MAX_LAYERS)
        check_int("d_ff", self.d_ff, 1, MAX_D_FF)
        _check_float("dropout", self.dropout, 0.0, 0.9)
        if self.positions not in POSITION_SCHEMES:
            raise ConfigError(f"positions must be one of {', '.join(POSITION_SCHEMES)}, got {self.positions!r}")
        if self.positions == "rope" and self.architecture != "decoder-only":
            raise ConfigError(f"positions 'rope' is for the decoder-only architecture, not {self.architecture}")
        check_int("max_len", self.max_len, 2, MAX_ROPE_LEN if self.positions == "rope" else MAX_LEN)
        _check_float("rope_base", self.rope_base, 2.0, 1e12)
        self._check_layers()
        check_int("pad_id", self.pad_id, 0, 0)
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.architecture not in ARCHITECTURE_NAMES:
            raise ConfigError(f"architecture must be one of {', '.join(ARCHITECTURE_NAMES)}, got {self.architecture!r}")
        if self.architecture == "encoder-only" and self.src_vocab_size != self.tgt_vocab_size:
            raise ConfigError("an encoder-only model reads and predicts one joint vocabulary (source and target "
                              f"sizes differ: {self.src_vocab_size} and {self.tgt_vocab_size})")
        if self.norm not in ("pre", "post"):
            raise ConfigError(f"norm must be 'pre' or 'post', got {self.norm!r}")
        if not isinstance(self.tie_embeddings, bool):
            raise ConfigError(f"tie_embeddings must be true or false, got {self.tie_embeddings!r}")
        if self.tie_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ConfigError("tie_embeddings needs one joint vocabulary (source and target sizes differ: "
                              f"{self.src_vocab_size} and {self.tgt_vocab_size})")

    def _check_layers(self) -> None:
        """The local and global layers' and the log-n scaling's fields."""
        check_int("window", self.window, 0, MAX_ROPE_LEN)
        check_int("global_every", self.global_every, 0, MAX_LAYERS)
        check_int("logn_length", self.logn_length, 0, MAX_ROPE_LEN)
        if self.window == 1:
            raise ConfigError("window must be 0 (none) or at least 2 (a window of 1 sees only the query's own token)")
        if self.window and self.positions != "rope":
            raise ConfigError("window (local layers) needs positions 'rope' on the decoder-only architecture")
        if self.global_every and not self.window:
            raise ConfigError("global_every needs a window: without one every layer is global already")
        if self.global_every == 1:
            raise ConfigError("global_every 1 makes every layer global: set window 0 instead")
        if self.logn_length == 1:
            raise ConfigError("logn_length must be 0 (none) or at least 2 (keys up to which queries stay unscaled)")
        if self.logn_length and self.architecture != "decoder-only":
            raise ConfigError(f"logn_length is for the decoder-only architecture, not {self.architecture}")

    def is_local(self, layer: int) -> bool:
        """Whether decoder-only layer `layer` (0-based) is local: RoPE and a sliding window."""
        return bool(self.window) and not (self.global_every and (layer + 1) % self.global_every == 0)

    def rotates(self, layer: int) -> bool:
        """Whether layer `layer` rotates its queries and keys (RoPE): every layer with RoPE and no window; with a
        window, the local layers only (the global ones have no positions)."""
        return self.positions == "rope" and (not self.window or self.is_local(layer))

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelConfig":
        return _from_dict(cls, data)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings and budgets for one training run."""

    batch_size: int = 128
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = 0.01
    warmup_steps: int = 100
    schedule: str = "cosine"  # "cosine", "constant" or "inverse_sqrt" after warmup
    min_lr_ratio: float = 0.05
    decay_steps: int = 0  # the cosine's horizon in steps (then no time budget shortens it); 0: max_steps
    max_steps: int = 2000
    max_seconds: float | None = None
    label_smoothing: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0
    eval_every: int = 250
    eval_examples: int = 200
    precision: str = "fp32"  # "auto" (bf16 where supported), "fp32" or "bf16" (autocast; fp32 master weights)

    def __post_init__(self) -> None:
        check_int("batch_size", self.batch_size, 1, MAX_BATCH)
        _check_float("lr", self.lr, 1e-8, 10.0)
        if len(self.betas) != 2:
            raise ConfigError("betas must be two numbers")
        for b in self.betas:
            _check_float("betas", b, 0.0, 0.99999)
        _check_float("weight_decay", self.weight_decay, 0.0, 10.0)
        check_int("warmup_steps", self.warmup_steps, 0, MAX_STEPS)
        if self.schedule not in ("cosine", "constant", "inverse_sqrt"):
            raise ConfigError(f"schedule must be cosine, constant or inverse_sqrt, got {self.schedule!r}")
        _check_float("min_lr_ratio", self.min_lr_ratio, 0.0, 1.0)
        check_int("decay_steps", self.decay_steps, 0, MAX_STEPS)
        check_int("max_steps", self.max_steps, 1, MAX_STEPS)
        if self.max_seconds is not None:
            _check_float("max_seconds", self.max_seconds, 0.1, MAX_SECONDS)
        _check_float("label_smoothing", self.label_smoothing, 0.0, 0.5)
        _check_float("grad_clip", self.grad_clip, 0.0, 1e6)
        check_int("seed", self.seed, 0, 2**31 - 1)
        check_int("eval_every", self.eval_every, 1, MAX_STEPS)
        check_int("eval_examples", self.eval_examples, 1, 100_000)
        if self.precision not in ("auto", "fp32", "bf16"):
            raise ConfigError(f"precision must be auto, fp32 or bf16, got {self.precision!r}")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        return _from_dict(cls, data)

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **changes)


# Size presets: model sizes (vocab sizes come from the task) plus matching training settings.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "tiny": {
        "model": dict(d_model=64, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=256, dropout=0.0),
        "train": dict(batch_size=64, lr=3e-3, warmup_steps=50, max_steps=600),
    },
    "small": {
        "model": dict(d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=512, dropout=0.1),
        "train": dict(batch_size=128, lr=1e-3, warmup_steps=200, max_steps=3000),
    },
    "reversal case study": {
        "model": dict(d_model=128, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=128, dropout=0.1,
                      norm="post"),
        "train": dict(batch_size=256, lr=1e-3, betas=(0.9, 0.98), weight_decay=0.0, warmup_steps=0,
                      schedule="constant", grad_clip=0.0, max_steps=200),
    },
    "base": {  # "paper base": the sizes of Attention Is All You Need
        "model": dict(d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048, dropout=0.1,
                      norm="post"),
        "train": dict(batch_size=64, lr=5e-4, warmup_steps=400, label_smoothing=0.1, max_steps=20000),
    },
}
PRESETS["paper base"] = PRESETS["base"]

# Per-task defaults, tuned on a 2-core CPU (bench/README.md has the figures).
_CHAR_TASK = {
    "model": dict(d_model=64, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=256, dropout=0.0, max_len=64),
    "train": dict(batch_size=48, lr=3e-3, weight_decay=0.0, warmup_steps=30, max_steps=1400, max_seconds=15.0,
                  eval_every=400),
}
TASK_DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {
    "reverse": _CHAR_TASK,
    # induction: a decoder-only language model over random letters (2 layers: a previous-token head in the first
    # feeds an induction head in the second)
    "induction": {
        "model": dict(d_model=64, n_heads=4, n_encoder_layers=1, n_decoder_layers=2, d_ff=128, dropout=0.0,
                      max_len=64, architecture="decoder-only"),
        "train": dict(batch_size=64, lr=3e-3, weight_decay=0.0, warmup_steps=50, max_steps=2000, eval_every=500),
    },
    # recall: a decoder-only model with RoPE (no position table, so it reads 2k-token streams and more); 2 layers:
    # a head that moves each key onto its value in the first (local: RoPE, a window of 16) feeds the retrieval head in
    # the second (global: no positions, log-n scaled past the 512 trained), so the lookup holds at 8k and beyond
    "recall": {
        "model": dict(d_model=64, n_heads=4, n_encoder_layers=1, n_decoder_layers=2, d_ff=128, dropout=0.0,
                      max_len=4096, architecture="decoder-only", positions="rope", window=16, global_every=2,
                      logn_length=512),
        "train": dict(batch_size=32, lr=3e-3, weight_decay=0.0, warmup_steps=50, max_steps=3000, eval_every=500),
    },
    "copy": _CHAR_TASK,
    "sort": _CHAR_TASK,
    "toy-en-de": {
        "model": dict(d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=512, dropout=0.0,
                      max_len=48),
        "train": dict(batch_size=64, lr=2e-3, weight_decay=0.0, warmup_steps=100, max_steps=3000, eval_every=500),
    },
    "corpus": {
        # 2+2 layers: on a 2-core CPU more steps of a shallower model beat fewer of 3+3; lr 2e-3 beat 1e-3 and 3e-3
        # over the ~1,100 steps of a 10-minute budget (bench/README, Multi30k)
        "model": dict(d_model=256, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=1024, dropout=0.1,
                      max_len=128),
        "train": dict(batch_size=64, lr=2e-3, warmup_steps=200, label_smoothing=0.1, max_steps=20000,
                      eval_every=1000, precision="auto"),
    },
}


def default_configs(task: str, src_vocab_size: int, tgt_vocab_size: int, preset: str | None = None,
                    model_overrides: dict[str, Any] | None = None,
                    train_overrides: dict[str, Any] | None = None) -> tuple[ModelConfig, TrainConfig]:
    """Model and training configs for a task: the task's defaults, then a size preset, then overrides."""
    if task not in TASK_DEFAULTS:
        raise ConfigError(f"unknown task {task!r}; choose one of {', '.join(TASK_DEFAULTS)}")
    if preset is not None and preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    model = dict(TASK_DEFAULTS[task]["model"])
    train = dict(TASK_DEFAULTS[task]["train"])
    if preset is not None:
        model.update(PRESETS[preset]["model"])
        train.update(PRESETS[preset]["train"])
    model.update(model_overrides or {})
    train.update(train_overrides or {})
    model_cfg = ModelConfig.from_dict({**model, "src_vocab_size": src_vocab_size, "tgt_vocab_size": tgt_vocab_size})
    return model_cfg, TrainConfig.from_dict(train)
