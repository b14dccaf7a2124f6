"""Checkpoints: a directory of JSON + safetensors files, saved atomically and validated on load.

Layout (format version 1):
- ``config.json``: format marker and version, model and train configs, tokenizer kinds, task spec, latest
  metrics, step, elapsed seconds.
- ``model.safetensors``: the model's state_dict.
- ``src_tokenizer.json``, ``tgt_tokenizer.json``: `Tokenizer.to_json()`.
- ``history.json``: ``{"history": [per-step dicts], "evals": [metric dicts]}``.
- ``optimizer.safetensors`` + ``optimizer.json`` (optional, together): AdamW moments as tensors named
  ``state.<param_index>.<name>``; param groups and scalar state (step counts) as JSON.
- ``probe_frames.safetensors`` (optional): the probe sentence's attention recorded while training, frame by frame
  (`probe_frames.py`); a checkpoint written before it had none and loads with no frames.
Nothing is ever unpickled: only safetensors and JSON are read.
"""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..data import Task, Tokenizer, task_from_spec
from ..model import ARCHITECTURES, ModelConfig, Network, TrainConfig, build_model, shapes_only
from .atomic import fsync_path, replace_directory, write_durably
from .checkpoint_format import (
    CONFIG,
    FORMAT_MARKER,
    FORMAT_VERSION,
    HISTORY,
    MODEL,
    OPTIMIZER_JSON,
    OPTIMIZER_TENSORS,
    PROBE_FRAMES,
    SRC_TOKENIZER,
    TGT_TOKENIZER,
    CheckpointError,
    optimizer_files,
    read_config,
    read_history,
    read_optimizer,
    read_tensors,
    read_tokenizer,
    write_json,
    write_tensors,
)
from .probe_frames import Frames, read_probe_frames, write_probe_frames

__all__ = ["FORMAT_VERSION", "Checkpoint", "CheckpointError", "is_valid_run_name", "list_checkpoints",
           "load_checkpoint", "load_probe_frames", "save_checkpoint", "task_for_checkpoint"]
_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]*")


@dataclass
class Checkpoint:
    """A trained model with everything needed to show it, evaluate it and resume training it."""

    model: Network
    model_config: ModelConfig
    train_config: TrainConfig
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    task_spec: dict
    step: int = 0
    elapsed: float = 0.0
    metrics: dict = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    optimizer_state: dict | None = None
    path: Path | None = None
    weights: str = "last"  # "last", or which best weights these are (e.g. "best validation loss (... at step N)")
    frames: Frames = field(default_factory=list)  # (step, probe trace) recorded while training, oldest first
    known_heads: dict[str, str] = field(default_factory=dict)  # head label (Head.label) -> role, e.g. "induction"

    @property
    def name(self) -> str:
        """The checkpoint directory's name, or "unsaved"."""
        return self.path.name if self.path is not None else "unsaved"

    def card(self) -> dict[str, Any]:
        """Summary for the UI: task, sizes, parameter count, training done and latest metrics."""
        return model_card(self.name, self.task_spec.get("name", "?"), self.src_tokenizer.kind, self.model_config,
                          self.model.num_parameters(), self.step, self.elapsed, self.metrics, self.weights,
                          self.known_heads)


_CARD_METRICS = ("n", "loss", "token_accuracy", "exact_match", "determined_accuracy", "bleu", "chrf",
                 "bleu_signature")


def model_card(name: str, task: str, level: str, cfg: ModelConfig, parameters: int, steps: int, seconds: float,
               metrics: dict[str, Any], weights: str = "last", known_heads: dict[str, str] | None = None
               ) -> dict[str, Any]:
    """The summary the UI shows of a model, saved or training: task, sizes, parameters, training done, metrics, and
    the heads whose role is known (label -> role; only when there are some)."""
    return {"name": name, "task": task, "level": level, "d_model": cfg.d_model, "n_heads": cfg.n_heads,
            "n_encoder_layers": cfg.n_encoder_layers, "n_decoder_layers": cfg.n_decoder_layers, "d_ff": cfg.d_ff,
            "architecture": cfg.architecture,
            "src_vocab_size": cfg.src_vocab_size, "tgt_vocab_size": cfg.tgt_vocab_size, "parameters": parameters,
            "steps": steps, "seconds": round(seconds, 2),
            "metrics": {k: v for k, v in metrics.items() if k in _CARD_METRICS}, "weights": weights,
            **({"known_heads": dict(known_heads)} if known_heads else {})}


# -- saving -------------------------------------------------------------------------------------------------
def _write_checkpoint_files(ckpt: Checkpoint, folder: Path, half: bool = False) -> None:
    """Write every file into `folder` (weights in fp16 when `half`); config.json goes last."""
    config = {"format": FORMAT_MARKER, "format_version": FORMAT_VERSION,
              "model_config": ckpt.model_config.to_dict(), "train_config": ckpt.train_config.to_dict(),
              "tokenizers": {"src": ckpt.src_tokenizer.kind, "tgt": ckpt.tgt_tokenizer.kind},
              "task_spec": ckpt.task_spec, "metrics": ckpt.metrics, "step": ckpt.step, "elapsed": ckpt.elapsed,
              "weights": ckpt.weights, **({"known_heads": ckpt.known_heads} if ckpt.known_heads else {})}
    weights = ckpt.model.state_dict()
    if ckpt.model_config.tie_embeddings:  # one copy of the shared matrix on disk
        tied = ARCHITECTURES[ckpt.model_config.architecture].TIED_WEIGHTS
        weights = {k: v for k, v in weights.items() if k not in tied}
    if half:
        weights = {k: v.half() for k, v in weights.items()}
    write_tensors(folder / MODEL, weights)
    write_durably(folder / SRC_TOKENIZER, ckpt.src_tokenizer.to_json())
    write_durably(folder / TGT_TOKENIZER, ckpt.tgt_tokenizer.to_json())
    write_json(folder / HISTORY, {"history": ckpt.history, "evals": ckpt.evals})
    if ckpt.optimizer_state is not None:
        tensors, meta = optimizer_files(ckpt.optimizer_state)
        write_tensors(folder / OPTIMIZER_TENSORS, tensors)
        write_json(folder / OPTIMIZER_JSON, meta)
    if ckpt.frames:
        write_probe_frames(folder / PROBE_FRAMES, ckpt.frames)
    write_json(folder / CONFIG, config, indent=2)
    fsync_path(folder)


def _move_into_place(tmp: Path, target: Path) -> None:
    """Rename the finished temp dir to `target`; fails if another save created `target` meanwhile."""
    try:
        os.rename(tmp, target)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise CheckpointError(f"{target} already exists; choose another name or allow overwriting") from None
        raise


SNAPSHOTS = "snapshots"  # a run directory's weight snapshots (train --keep-snapshots): kept when it is replaced


def snapshot_name(step: int) -> str:
    """A weight snapshot's folder under the run's `snapshots/`: step-0000100."""
    return f"step-{step:07d}"


def list_snapshots(run: str | Path) -> list[tuple[int, Path]]:
    """The run directory's complete weight snapshots (train --keep-snapshots), (step, folder), oldest first."""
    folder = Path(run) / SNAPSHOTS
    found = [(int(p.name.removeprefix("step-")), p) for p in folder.glob("step-*")
             if p.name.removeprefix("step-").isdigit() and (p / CONFIG).is_file()] if folder.is_dir() else []
    return sorted(found)


def save_checkpoint(ckpt: Checkpoint, path: str | Path, *, overwrite: bool = False, half: bool = False) -> Path:
    """Write `ckpt` to directory `path` atomically; refuses to replace an existing one unless `overwrite`.

    `half` stores the weights in fp16 (half the size; loading upcasts them to fp32). A replaced directory's
    `snapshots/` folder (train --keep-snapshots) moves into the new one.
    """
    target = Path(path)
    if ckpt.src_tokenizer.vocab_size != ckpt.model_config.src_vocab_size or \
            ckpt.tgt_tokenizer.vocab_size != ckpt.model_config.tgt_vocab_size:
        raise CheckpointError("cannot save: the tokenizers' vocabulary sizes do not match the model config")
    if target.exists() or target.is_symlink():
        if not overwrite:
            raise CheckpointError(f"{target} already exists; choose another name or allow overwriting")
        if not target.is_dir() or target.is_symlink() or (
                any(p.name != SNAPSHOTS for p in target.iterdir()) and not (target / CONFIG).is_file()):
            raise CheckpointError(f"{target} exists and is not a checkpoint directory; refusing to replace it")
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        os.chmod(tmp, 0o755)
        _write_checkpoint_files(ckpt, tmp, half)
        if overwrite and target.is_dir() and any(target.iterdir()):
            kept = (target / SNAPSHOTS).is_dir()
            if kept:
                os.rename(target / SNAPSHOTS, tmp / SNAPSHOTS)
            try:
                replace_directory(tmp, target)
            except OSError:
                if kept:
                    os.rename(tmp / SNAPSHOTS, target / SNAPSHOTS)
                raise
        else:
            _move_into_place(tmp, target)
            tmp = None
        fsync_path(target.parent)
    except OSError as exc:
        raise CheckpointError(f"cannot save checkpoint to {target}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


# -- loading ------------------------------------------------------------------------------------------------
def load_checkpoint(path: str | Path, *, load_optimizer: bool = True, load_frames: bool = True) -> Checkpoint:
    """Load and validate a checkpoint directory; the model comes back in eval mode. Raises CheckpointError.

    The probe frames are read when `load_frames` (none when the checkpoint has no frames file)."""
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: not a checkpoint directory (it does not exist or is a file)")
    config = read_config(folder)
    model_cfg: ModelConfig = config["model_config"]
    kinds = config["tokenizers"]
    src_tok = read_tokenizer(folder / SRC_TOKENIZER, kinds.get("src"), model_cfg.src_vocab_size)
    tgt_tok = read_tokenizer(folder / TGT_TOKENIZER, kinds.get("tgt"), model_cfg.tgt_vocab_size)
    history, evals = read_history(folder / HISTORY)
    architecture = ARCHITECTURES[model_cfg.architecture]  # a config without the field: an encoder-decoder
    with shapes_only():  # a huge config costs nothing until the file backs it up
        expected = {k: tuple(v.shape) for k, v in architecture(model_cfg).state_dict().items()}
    if model_cfg.tie_embeddings:
        expected = {k: v for k, v in expected.items() if k not in architecture.TIED_WEIGHTS}
    weights = read_tensors(folder / MODEL, expected, "the model in config.json")
    if model_cfg.tie_embeddings:
        weights.update({k: weights[architecture.TIED_SOURCE] for k in architecture.TIED_WEIGHTS})
    model = build_model(model_cfg)
    model.load_state_dict(weights)  # copies into the fp32 parameters (fp16 files are upcast)
    model.eval()
    optimizer_state = read_optimizer(folder, model, config["train_config"]) if load_optimizer else None
    frames = load_probe_frames(folder) if load_frames else []
    return Checkpoint(model, model_cfg, config["train_config"], src_tok, tgt_tok, config["task_spec"],
                      config.get("step", 0), float(config.get("elapsed", 0.0)), config.get("metrics", {}),
                      history, evals, optimizer_state, folder, _weights_label(config.get("weights", "last")), frames,
                      config["known_heads"])


def load_probe_frames(path: str | Path) -> Frames:
    """The probe frames saved with a checkpoint directory, oldest first ([] when it has none; a checkpoint from
    before frames were saved has none). Raises CheckpointError for a frames file that does not validate."""
    file = Path(path) / PROBE_FRAMES
    return read_probe_frames(file) if file.is_file() else []


def _weights_label(value: Any) -> str:
    """The config's "weights" label (which weights the checkpoint holds), shortened to one safe line."""
    return value.replace("\n", " ")[:120] if isinstance(value, str) and value else "last"


def task_for_checkpoint(ckpt: Checkpoint) -> Task:
    """The checkpoint's task rebuilt from its spec, using the checkpoint's tokenizers so token ids agree."""
    task = task_from_spec(ckpt.task_spec, tokenizers=(ckpt.src_tokenizer, ckpt.tgt_tokenizer))
    return replace(task, src_tokenizer=ckpt.src_tokenizer, tgt_tokenizer=ckpt.tgt_tokenizer)


# -- run directories ----------------------------------------------------------------------------------------
def list_checkpoints(root: str | Path) -> list[Path]:
    """Complete checkpoint directories directly under `root` (hidden and temporary ones skipped), by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.is_dir()
                  and (p / CONFIG).is_file() and (p / MODEL).is_file())


def checkpoint_family(path: str | Path) -> str:
    """The model family of a checkpoint folder from its config.json alone ("encoder-decoder" when the config has no
    architecture, as every checkpoint written before decoder-only models); nothing else is read or checked."""
    try:
        config = json.loads((Path(path) / CONFIG).read_text(encoding="utf-8"))
        architecture = config["model_config"].get("architecture", "encoder-decoder")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "encoder-decoder"  # loading it says what is wrong
    return architecture if isinstance(architecture, str) else "encoder-decoder"


def checkpoint_task(path: str | Path) -> str | None:
    """The task a checkpoint folder was trained on, from its config.json alone (None when it does not say)."""
    try:
        task = json.loads((Path(path) / CONFIG).read_text(encoding="utf-8"))["task_spec"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return task if isinstance(task, str) else None


def is_valid_run_name(name: str) -> str | None:
    """None when `name` can name a run directory, else a message saying what is wrong with it."""
    if not isinstance(name, str) or not name.strip():
        return "Give the run a name."
    if len(name) > 64:
        return f"A run name has at most 64 characters; this one has {len(name)}."
    if "/" in name or "\\" in name or ".." in name:
        return "A run name cannot contain '/', '\\' or '..'."
    if name.startswith("."):
        return "A run name cannot start with '.'."
    if not _RUN_NAME.fullmatch(name):
        return "A run name starts with a letter or digit and uses only letters, digits, spaces, '_', '.' and '-'."
    if name.endswith((" ", ".")):
        return "A run name cannot end with a space or '.'."
    return None
