"""The files of a checkpoint directory: names, writers and validating readers (safetensors + JSON only).

Every reader raises `CheckpointError` naming the file at fault; nothing is ever unpickled.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor

from ..data import TASK_NAMES, TOKENIZER_KINDS, Tokenizer, TokenizerError
from ..model import (
    FAMILIES,
    MAX_STEPS,
    ConfigError,
    Head,
    HeadError,
    ModelConfig,
    Network,
    TrainConfig,
    make_optimizer,
)
from .atomic import fsync_path, write_durably

FORMAT_VERSION = 1
FORMAT_MARKER = "attention-studio-checkpoint"
CONFIG, MODEL, HISTORY = "config.json", "model.safetensors", "history.json"
SRC_TOKENIZER, TGT_TOKENIZER = "src_tokenizer.json", "tgt_tokenizer.json"
OPTIMIZER_TENSORS, OPTIMIZER_JSON = "optimizer.safetensors", "optimizer.json"
PROBE_FRAMES = "probe_frames.safetensors"  # optional: the probe's attention while training (store/probe_frames.py)
CHECKPOINT_FILES = (CONFIG, MODEL, SRC_TOKENIZER, TGT_TOKENIZER, HISTORY, OPTIMIZER_TENSORS, OPTIMIZER_JSON,
                    PROBE_FRAMES)
_FLOAT_DTYPES = {"F16", "BF16", "F32", "F64"}
_OPTIMIZER_STATE_NAMES = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
# Per-step history and evaluation records: the keys the app reads, and what each must hold.
_NUMBER_KEYS = {"loss", "accuracy", "lr", "tokens", "elapsed", "n", "token_accuracy", "exact_match", "bleu", "chrf"}
_EXAMPLE_KEYS = ("source", "reference", "output")


class CheckpointError(ValueError):
    """A checkpoint cannot be saved or loaded; the message names the file at fault."""


# -- writing ------------------------------------------------------------------------------------------------
def finite_json(value: Any) -> Any:
    """`value` with tuples as lists and NaN/inf floats as None, so it is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def write_json(path: Path, value: Any, indent: int | None = None) -> None:
    """Write strict JSON (NaN/inf as null) and fsync it."""
    write_durably(path, json.dumps(finite_json(value), indent=indent, ensure_ascii=False))


def write_tensors(path: Path, tensors: dict[str, Tensor]) -> None:
    """Write tensors as safetensors and fsync the file."""
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(path))
    fsync_path(path)


def optimizer_files(state: dict) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """Split a torch optimizer state_dict into tensors (safetensors) and JSON (groups, scalar state)."""
    tensors: dict[str, Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for index, entries in state["state"].items():
        for name, value in entries.items():
            if isinstance(value, Tensor) and value.dim() > 0:
                tensors[f"state.{index}.{name}"] = value
            elif isinstance(value, Tensor):
                dtype = str(value.dtype).removeprefix("torch.")
                scalars.setdefault(str(index), {})[name] = {"tensor": dtype, "value": value.item()}
            else:
                scalars.setdefault(str(index), {})[name] = value
    return tensors, {"param_groups": finite_json(state["param_groups"]), "state": scalars}


# -- reading ------------------------------------------------------------------------------------------------
def read_json(path: Path) -> Any:
    """Parsed JSON of a file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: file is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{path}: not a readable JSON file ({exc})") from None


def _require(ok: bool, path: Path, message: str) -> None:
    if not ok:
        raise CheckpointError(f"{path}: {message}")


def read_tensors(path: Path, expected: dict[str, tuple[int, ...]], what: str) -> dict[str, Tensor]:
    """Read float tensors whose names and shapes must be exactly `expected`; checks they are finite."""
    names = set(_tensor_names(path))
    try:
        with safe_open(str(path), framework="pt") as fh:
            missing, extra = sorted(set(expected) - names), sorted(names - set(expected))
            _require(not missing, path, f"missing tensor(s) {', '.join(missing[:5])} that {what} needs")
            _require(not extra, path, f"unexpected tensor(s) {', '.join(extra[:5])} that {what} does not have")
            for name in sorted(names):
                view = fh.get_slice(name)
                shape = tuple(view.get_shape())
                _require(shape == expected[name], path,
                         f"tensor {name} has shape {list(shape)} but {what} needs {list(expected[name])}")
                _require(view.get_dtype() in _FLOAT_DTYPES, path,
                         f"tensor {name} has dtype {view.get_dtype()}; expected floating point")
            tensors = {name: fh.get_tensor(name) for name in sorted(names)}
    except (SafetensorError, OSError) as exc:
        raise CheckpointError(f"{path}: not a valid safetensors file ({exc})") from None
    for name, tensor in tensors.items():
        _require(bool(torch.isfinite(tensor).all()), path, f"tensor {name} contains NaN or infinite values")
    return tensors


def read_config(folder: Path) -> dict[str, Any]:
    """config.json as a dict whose model_config/train_config are validated config objects."""
    path = folder / CONFIG
    data = read_json(path)
    _require(isinstance(data, dict) and data.get("format") == FORMAT_MARKER, path,
             "not an Attention Studio checkpoint config")
    version = data.get("format_version")
    _require(isinstance(version, int) and not isinstance(version, bool) and version >= 1, path,
             f"unknown format version {version!r}")
    _require(version <= FORMAT_VERSION, path, f"format version {version} was written by a newer version of "
             f"Attention Studio; this one reads format {FORMAT_VERSION}")
    try:
        data["model_config"] = ModelConfig.from_dict(data.get("model_config"))
        data["train_config"] = TrainConfig.from_dict(data.get("train_config"))
    except ConfigError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    step, elapsed, spec = data.get("step", 0), data.get("elapsed", 0.0), data.get("task_spec")
    _require(isinstance(step, int) and not isinstance(step, bool) and 0 <= step <= MAX_STEPS, path,
             f"step must be an integer between 0 and {MAX_STEPS}, got {step!r}")
    _require(isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and math.isfinite(elapsed)
             and elapsed >= 0, path, f"elapsed must be a non-negative number, got {elapsed!r}")
    _require(isinstance(spec, dict) and spec.get("name") in TASK_NAMES, path,
             f"task_spec must be an object whose name is one of {', '.join(TASK_NAMES)}")
    _check_record(data.get("metrics", {}), path, "metrics")
    data["known_heads"] = check_known_heads(data.get("known_heads", {}), path, data["model_config"])
    kinds = data.get("tokenizers")
    _require(isinstance(kinds, dict) and kinds.get("src") in TOKENIZER_KINDS and kinds.get("tgt") in TOKENIZER_KINDS,
             path, f'tokenizers must be {{"src": kind, "tgt": kind}} with kinds {", ".join(TOKENIZER_KINDS)}')
    return data


def read_tokenizer(path: Path, kind: Any, vocab_size: int) -> Tokenizer:
    """A tokenizer file whose kind and vocabulary size must match config.json."""
    try:
        tokenizer = Tokenizer.from_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: file is missing") from None
    except (OSError, UnicodeDecodeError, TokenizerError) as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    _require(tokenizer.kind == kind, path, f"tokenizer kind is {tokenizer.kind!r} but config.json says {kind!r}")
    _require(tokenizer.vocab_size == vocab_size, path,
             f"vocabulary has {tokenizer.vocab_size} tokens but the model config needs {vocab_size}")
    return tokenizer


MAX_KNOWN_HEADS = 64


def check_known_heads(value: Any, path: Path, cfg: ModelConfig) -> dict[str, str]:
    """config.json's "known_heads": head label (`Head.label`, e.g. "self:L1H2") -> its role (e.g. "induction"),
    each a head the model in `cfg` has."""
    _require(isinstance(value, dict) and len(value) <= MAX_KNOWN_HEADS and all(
        isinstance(k, str) and isinstance(v, str) and 0 < len(v) <= 60 for k, v in value.items()), path,
        f'known_heads must be an object of at most {MAX_KNOWN_HEADS} head labels -> roles ("self:L1H2": "induction")')
    try:
        labels = {k: Head.parse(k).label for k in value}
    except HeadError as exc:
        raise CheckpointError(f"{path}: known_heads: {exc}") from None
    _require(all(labels[k] == k for k in value), path, "known_heads: write each head as Head.label does (self:L1H2)")
    family = FAMILIES[cfg.architecture]
    layers = {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers,
              "cross": cfg.n_decoder_layers, "self": cfg.n_decoder_layers}
    for label in value:
        head = Head.parse(label)
        _require(head.kind in family.kinds and 0 <= head.layer < layers[head.kind] and 0 <= head.head < cfg.n_heads,
                 path, f"known_heads: the model has no head {label}")
    return dict(value)


def _check_record(record: Any, path: Path, where: str) -> None:
    """A history or metrics record: a step count, numbers (null for NaN) and examples of strings, as written."""
    _require(isinstance(record, dict), path, f"{where} must be an object")
    step = record.get("step", 0)
    _require(isinstance(step, int) and not isinstance(step, bool) and step >= 0, path,
             f"{where}: step must be a non-negative integer, got {step!r}")
    for key in _NUMBER_KEYS & set(record):
        value = record[key]
        _require(value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)), path,
                 f"{where}: {key} must be a number, got {value!r}")
    examples = record.get("examples", [])
    _require(isinstance(examples, list) and all(
        isinstance(e, dict) and all(isinstance(e.get(k), str) for k in _EXAMPLE_KEYS) for e in examples), path,
        f'{where}: "examples" must be a list of {{"source", "reference", "output"}} strings')


def read_history(path: Path) -> tuple[list[dict], list[dict]]:
    """history.json: the per-step history and the evaluations."""
    data = read_json(path)
    _require(isinstance(data, dict), path, 'expected an object with "history" and "evals"')
    history, evals = data.get("history", []), data.get("evals", [])
    for name, rows in (("history", history), ("evals", evals)):
        _require(isinstance(rows, list), path, f'"{name}" must be a list of objects')
        for i, row in enumerate(rows):
            _check_record(row, path, f'"{name}" entry {i + 1}')
    return history, evals


def _scalar_state(value: Any, path: Path) -> Any:
    """One scalar of optimizer state: a number, or {"tensor": dtype, "value": number} for a 0-d tensor."""
    if isinstance(value, dict):
        dtype = getattr(torch, str(value.get("tensor")), None)
        number = value.get("value")
        _require(isinstance(dtype, torch.dtype) and isinstance(number, (int, float)) and math.isfinite(number),
                 path, f"bad scalar tensor state {value!r}")
        return torch.tensor(value["value"], dtype=dtype)
    _require(isinstance(value, (int, float)) and math.isfinite(value), path, f"bad scalar state {value!r}")
    return value


def _tensor_names(path: Path) -> list[str]:
    """Names of the tensors in a safetensors file (header only); anything else is a CheckpointError."""
    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing")
    try:
        with safe_open(str(path), framework="pt") as fh:
            return list(fh.keys())
    except (SafetensorError, OSError) as exc:
        raise CheckpointError(f"{path}: not a valid safetensors file ({exc})") from None


def read_optimizer(folder: Path, model: Network, train_cfg: TrainConfig) -> dict | None:
    """The AdamW state_dict stored beside the model, checked against the optimizer the config builds."""
    json_path, tensor_path = folder / OPTIMIZER_JSON, folder / OPTIMIZER_TENSORS
    if not json_path.exists() and not tensor_path.exists():
        return None
    meta = read_json(json_path)
    reference = make_optimizer(model, train_cfg)
    ref_groups = reference.state_dict()["param_groups"]
    groups, scalars = (meta.get("param_groups"), meta.get("state")) if isinstance(meta, dict) else (None, None)
    _require(isinstance(groups, list) and all(isinstance(g, dict) for g in groups) and isinstance(scalars, dict),
             json_path, 'expected an object with "param_groups" (a list) and "state"')
    assert isinstance(groups, list) and isinstance(scalars, dict)  # _require raised otherwise
    _require([g.get("params") for g in groups] == [g["params"] for g in ref_groups], json_path,
             "the parameter groups do not match the model in config.json")
    params = [p for g in reference.param_groups for p in g["params"]]
    expected: dict[str, tuple[int, ...]] = {}
    for key in _tensor_names(tensor_path):
        match = re.fullmatch(r"state\.(\d+)\.(\w+)", key)
        _require(match is not None and int(match[1]) < len(params) and match[2] in _OPTIMIZER_STATE_NAMES,
                 tensor_path, f"unexpected tensor {key!r}")
        assert match is not None  # _require raised otherwise
        expected[key] = tuple(params[int(match[1])].shape)
    state: dict[int, dict[str, Any]] = {}
    for index, entries in scalars.items():
        _require(index.isdigit() and int(index) < len(params) and isinstance(entries, dict)
                 and set(entries) <= _OPTIMIZER_STATE_NAMES, json_path, f"bad state entry {index!r}")
        state[int(index)] = {name: _scalar_state(v, json_path) for name, v in entries.items()}
    for key, tensor in read_tensors(tensor_path, expected, "the model in config.json").items():
        _, index, name = key.split(".")
        state.setdefault(int(index), {})[name] = tensor
    for index, entries in state.items():
        _require({"step", "exp_avg", "exp_avg_sq"} <= set(entries), json_path,
                 f"parameter {index} has incomplete optimizer state ({', '.join(sorted(entries))})")
    groups = [{k: tuple(v) if k == "betas" else v for k, v in g.items()} for g in groups]
    optimizer_state = {"state": state, "param_groups": groups}
    try:
        reference.load_state_dict(optimizer_state)
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{json_path}: optimizer state does not fit the model ({exc})") from None
    return optimizer_state
