"""`train`'s set-up from its flags: a new trainer (task, preset, flags, or the stage recipe) or a resumed one, the
output folder checked before training, and the probe recorder."""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import torch

from ..data import GENERATED_TASKS, DataError, TaskSpec, make_task, masked_lm_task
from ..model import TrainConfig, default_configs
from ..store import load_checkpoint, load_probe_frames
from ..train import ProbeRecorder, StopWhenClean, Trainer, trainer_from_checkpoint
from .common import UsageError
from .train_stage import stage_trainer_configs

MODEL_FLAGS = {"d_model": "d_model", "heads": "n_heads", "enc_layers": "n_encoder_layers",
               "dec_layers": "n_decoder_layers", "d_ff": "d_ff", "dropout": "dropout", "norm": "norm",
               "max_len": "max_len", "architecture": "architecture",
               "positions": "positions", "rope_base": "rope_base", "window": "window", "global_every": "global_every",
               "logn_length": "logn_length"}
TRAIN_FLAGS = {"batch_size": "batch_size", "lr": "lr", "warmup": "warmup_steps", "label_smoothing": "label_smoothing",
               "grad_clip": "grad_clip", "weight_decay": "weight_decay", "schedule": "schedule",
               "eval_every": "eval_every", "eval_examples": "eval_examples", "precision": "precision",
               "decay_steps": "decay_steps"}
TASK_FLAGS = ("task", "data", "text_file", "n_train", "n_valid", "max_pairs", "min_freq", "valid_data", "tokenizer",
              "vocab_size", "separate_vocab")


def _overrides(args: argparse.Namespace, flags: dict[str, str]) -> dict[str, Any]:
    return {name: getattr(args, flag) for flag, name in flags.items() if getattr(args, flag) is not None}


def _budget_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """--steps alone means exactly that many steps (no default time budget); --max-seconds sets one."""
    train: dict[str, Any] = {}
    if args.steps is not None:
        train.update(max_steps=args.steps, max_seconds=args.max_seconds)
    elif args.max_seconds is not None:
        train["max_seconds"] = args.max_seconds
    if args.seed is not None:
        train["seed"] = args.seed
    return train


def new_trainer(args: argparse.Namespace, device: torch.device, processes: int = 1) -> Trainer:
    """A trainer for --task: the task's defaults, then --preset, then the flags (with --stage, the stage recipe)."""
    if args.task is None:
        raise UsageError("train needs --task (or --resume DIR)")
    corpus = args.task == "corpus"
    if not corpus and (args.data or args.text_file or args.max_pairs):
        raise UsageError(f"--data, --text-file and --max-pairs are for --task corpus, not {args.task}")
    corpus_only = [f"--{f.replace('_', '-')}" for f in ("valid_data", "tokenizer", "vocab_size", "separate_vocab")
                   if getattr(args, f) is not None]
    if not corpus and corpus_only:
        raise UsageError(f"{', '.join(corpus_only)} are for --task corpus, not {args.task}")
    if corpus and args.n_train is not None:
        raise UsageError("--n-train is for generated tasks and toy-en-de; use --max-pairs for a corpus")
    if args.min_freq is not None and args.task in GENERATED_TASKS:
        raise UsageError("--min-freq is for word-level tasks (toy-en-de, corpus)")
    kwargs: dict[str, Any] = {k: getattr(args, k) for k in ("n_train", "n_valid", "max_pairs", "min_freq")
                              if getattr(args, k) is not None}
    if args.data:
        kwargs["data"] = [str(Path(p).resolve()) for p in args.data]  # the checkpoint stores them portably
    if args.valid_data:
        kwargs["valid_data"] = [str(Path(p).resolve()) for p in args.valid_data]
    kwargs.update({k: getattr(args, k) for k in ("tokenizer", "vocab_size") if getattr(args, k) is not None})
    if args.separate_vocab:
        kwargs["joint"] = False
    if args.text_file:
        try:
            kwargs["text"] = Path(args.text_file).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"{args.text_file}: not valid UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                            f"at offset {exc.start})") from None
    task = make_task(TaskSpec(name=args.task, seed=args.seed or 0, **kwargs))
    if args.architecture == "encoder-only":  # both sentences of a pair in one input: one joint vocabulary
        task = masked_lm_task(task)
    tie = task.shares_vocabulary and not args.no_tie
    if args.stage:  # the stage demo: its recipe, and its rule stops the run when the picture is clean
        model_cfg, train_cfg, rule = stage_trainer_configs(task, _overrides(args, MODEL_FLAGS),
                                                           {**_overrides(args, TRAIN_FLAGS), **_budget_overrides(args)},
                                                           processes)
        return Trainer(task, model_cfg, train_cfg, device=device, callbacks=[StopWhenClean(rule)])
    model_cfg, train_cfg = default_configs(task.name, task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           args.preset, {"tie_embeddings": tie, **_overrides(args, MODEL_FLAGS)},
                                           {**_overrides(args, TRAIN_FLAGS), **_budget_overrides(args)})
    return Trainer(task, model_cfg, train_cfg, device=device)


def resumed_trainer(args: argparse.Namespace, device: torch.device) -> Trainer:
    """The --resume checkpoint's trainer with the training flags over its TrainConfig (task and model flags refused)."""
    fixed = [f"--{f.replace('_', '-')}" for f in (*MODEL_FLAGS, "preset", *TASK_FLAGS) if getattr(args, f) is not None]
    fixed += ["--no-tie"] if args.no_tie else []
    if fixed:
        raise UsageError(f"--resume keeps the checkpoint's task and model; drop {', '.join(fixed)}")
    ckpt = load_checkpoint(args.resume)
    changes = {**_overrides(args, TRAIN_FLAGS), **_budget_overrides(args)}
    train_cfg = TrainConfig.from_dict({**ckpt.train_config.to_dict(), **changes})
    return trainer_from_checkpoint(ckpt, train_config=train_cfg, device=device)


def check_out(out: Path, replace_ok: bool) -> None:
    """Fail before training, not after, when --out cannot be written."""
    if (out.exists() or out.is_symlink()) and not replace_ok:
        raise UsageError(f"{out} already exists; use --force to replace it, or choose another --out")
    if out.exists() and not ((out / "config.json").is_file() or (out.is_dir() and not any(out.iterdir()))):
        raise UsageError(f"{out} exists and is not a checkpoint directory; refusing to replace it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryDirectory(dir=out.parent).cleanup()
    except OSError as exc:
        raise UsageError(f"cannot write to {out.parent}: {exc.strerror or exc}") from None


def probe_recorder(args: argparse.Namespace, trainer: Trainer) -> ProbeRecorder | None:
    """The probe recorded while training (after the frames a resumed checkpoint saved), or None with
    --probe-frames 0; its first frame is the model as training starts."""
    if args.probe_frames < 0:
        raise UsageError(f"--probe-frames must be 0 or more, got {args.probe_frames}")
    if args.probe_frames == 0:
        if args.probe:
            raise UsageError("--probe needs --probe-frames above 0")
        return None
    text = (args.probe or "").strip() or trainer.task.probe
    earlier = load_probe_frames(args.resume) if args.resume else []
    recorder = ProbeRecorder(text, frames=args.probe_frames, earlier=earlier)
    recorder.start(trainer)
    if args.probe and not recorder.timeline[len(earlier):]:
        raise UsageError(f"the model cannot read the probe {text!r}")
    return recorder
