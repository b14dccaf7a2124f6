"""`python -m transformer train`: build or resume a trainer, train within the budgets, evaluate and save.

Errors a user can cause raise one of `cli.USER_ERRORS` (or `UsageError`); `cli.main` prints them on one line.
"""
from __future__ import annotations

import argparse
import signal
import shutil
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, TextIO

import torch

from .cli_args import EXIT_INTERRUPTED, EXIT_USER_ERROR, MODEL_FLAGS, TASK_FLAGS, TRAIN_FLAGS, UsageError
from .cli_stage import check_stage, stage_hint, stage_trainer_configs
from .data import GENERATED_TASKS, DataError, TaskSpec, make_task, masked_lm_task
from .model import TrainConfig, default_configs
from .store import SNAPSHOTS, load_checkpoint, load_probe_frames, save_checkpoint
from .train import (
    available_cores,
    CheckpointEvery,
    SnapshotEvery,
    DistEnv,
    DistributedTrainer,
    KeepBest,
    NonFiniteLossError,
    ProbeRecorder,
    StepStats,
    StopWhenClean,
    Trainer,
    checkpoint_from_trainer,
    resolve_device,
    start_process_group,
    stop_process_group,
    torchrun_env,
    trainer_from_checkpoint,
)


class ProgressLine:
    """Training callback writing `step n/N  loss  acc  steps/s  time`: one updating line on a terminal."""

    def __init__(self, total: int, first_step: int, stream: TextIO) -> None:
        self.total, self.first_step, self.stream = total, first_step, stream
        self.tty = stream.isatty()
        self.began = self.last = time.perf_counter()
        self.pending = False
        self.signed = False

    def on_step_end(self, trainer: Trainer, stats: StepStats) -> None:
        now = time.perf_counter()
        due = now - self.last >= 0.2 if self.tty else stats.step % max(self.total // 10, 1) == 0
        if not due and stats.step < self.total:
            return
        self.last = now
        rate = (stats.step - self.first_step) / max(now - self.began, 1e-9)
        line = (f"step {stats.step}/{self.total}  loss {stats.loss:.4f}  acc {stats.accuracy:.3f}  "
                f"{rate:.1f} steps/s  {now - self.began:.1f}s")
        self.stream.write(f"\r{line:<78}" if self.tty else line + "\n")
        self.stream.flush()
        self.pending = self.tty

    def on_eval(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        self.finish()
        self.stream.write(f"eval at step {metrics['step']}: {_metrics_text(metrics)}\n")
        if "bleu_signature" in metrics and not self.signed:
            self.stream.write(f"  ({metrics['bleu_signature']}, {metrics['chrf_signature']})\n")
            self.signed = True

    def finish(self) -> None:
        """End the updating line so the next output starts on its own line."""
        if self.pending:
            self.stream.write("\n")
            self.pending = False


def _metrics_text(metrics: dict[str, Any]) -> str:
    keys = ("loss", "token_accuracy", "exact_match", "bleu", "chrf")
    return ", ".join(f"{k} {metrics[k]:.4g}" for k in keys if isinstance(metrics.get(k), (int, float)))


@contextmanager
def _stop_on_ctrl_c(stop: threading.Event) -> Iterator[None]:
    """First Ctrl-C asks training to stop after the current step (then it is saved); a second one aborts."""
    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        sys.stderr.write("\nstopping after this step and saving (Ctrl-C again to abort)\n")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Under torchrun: SIGINT and SIGTERM (what torchrun sends its workers on Ctrl-C) stop after the current step.

    torchrun forwards a Ctrl-C as SIGINT then SIGTERM and kills what is still running 30 s later, so every signal
    only asks for the agreed stop; rank 0 then saves.
    """
    previous = {sig: signal.signal(sig, lambda signum, frame: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _overrides(args: argparse.Namespace, flags: dict[str, str]) -> dict[str, Any]:
    return {name: getattr(args, flag) for flag, name in flags.items() if getattr(args, flag) is not None}


def _budget_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """--steps alone means exactly that many steps (no default time budget); --max-seconds sets one."""
    train = {}
    if args.steps is not None:
        train.update(max_steps=args.steps, max_seconds=args.max_seconds)
    elif args.max_seconds is not None:
        train["max_seconds"] = args.max_seconds
    if args.seed is not None:
        train["seed"] = args.seed
    return train


def _new_trainer(args: argparse.Namespace, device: torch.device, processes: int = 1) -> Trainer:
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


def _resumed_trainer(args: argparse.Namespace, device: torch.device) -> Trainer:
    fixed = [f"--{f.replace('_', '-')}" for f in (*MODEL_FLAGS, "preset", *TASK_FLAGS) if getattr(args, f) is not None]
    fixed += ["--no-tie"] if args.no_tie else []
    if fixed:
        raise UsageError(f"--resume keeps the checkpoint's task and model; drop {', '.join(fixed)}")
    ckpt = load_checkpoint(args.resume)
    changes = {**_overrides(args, TRAIN_FLAGS), **_budget_overrides(args)}
    train_cfg = TrainConfig.from_dict({**ckpt.train_config.to_dict(), **changes})
    return trainer_from_checkpoint(ckpt, train_config=train_cfg, device=device)


def _check_out(out: Path, replace_ok: bool) -> None:
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


def _probe_recorder(args: argparse.Namespace, trainer: Trainer) -> ProbeRecorder | None:
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


def cmd_train(args: argparse.Namespace) -> int:
    """`train`: build or resume a trainer, train within the budgets, evaluate, save, print a summary.

    Under torchrun with several processes it trains one model with DistributedDataParallel; rank 0 alone prints,
    validates and saves (see `transformer.train.distributed`).
    """
    env = torchrun_env()
    if env is None:
        return _train(args, None)
    try:
        return _train(args, env)
    finally:
        stop_process_group()


def _train(args: argparse.Namespace, env: DistEnv | None) -> int:
    leader = env is None or env.is_main  # the one process that checks --out, prints, evaluates and saves
    check_stage(args)
    device = resolve_device(args.device, env.local_rank if env is not None else 0)
    out = Path(args.out)
    same_dir = args.resume is not None and out.resolve() == Path(args.resume).resolve()
    if leader:
        _check_out(out, args.force or same_dir)
    trainer = (_resumed_trainer(args, device) if args.resume
               else _new_trainer(args, device, env.world if env is not None else 1))
    if not leader:  # rank 0 alone checks the stage rule (and stops everyone)
        trainer.callbacks = [cb for cb in trainer.callbacks if not isinstance(cb, StopWhenClean)]
    elif args.stage and env is None and device.type == "cpu":
        hint = stage_hint(trainer.task.name, 1, available_cores())
        if hint:
            print(hint, file=sys.stderr)
    batch = f"batch {trainer.cfg.batch_size} on {device}"
    if env is not None:
        layout = start_process_group(env, device=device)
        trainer = DistributedTrainer.from_trainer(trainer, env)
        batch = (f"global batch {trainer.global_batch_size} = {trainer.cfg.batch_size} per process x {env.world}; "
                 f"{layout}")
    progress = ProgressLine(trainer.cfg.max_steps, trainer.step, sys.stderr)
    best = KeepBest(args.keep_best)
    probe = _probe_recorder(args, trainer) if leader else None
    if leader:
        trainer.callbacks += [progress, best, *([probe] if probe else [])]
        if args.save_every:
            trainer.callbacks.append(CheckpointEvery(args.save_every, out, optimizer=not args.no_optimizer))
        if args.keep_snapshots:
            if not same_dir and out.is_dir() and (out / SNAPSHOTS).is_dir():  # --force: the replaced run's
                shutil.rmtree(out / SNAPSHOTS)
            trainer.callbacks.append(SnapshotEvery(args.keep_snapshots, out))
        if trainer.precision_note:
            print(f"note: {trainer.precision_note}", file=sys.stderr)
    stop = threading.Event()
    with _stop_on_ctrl_c(stop) if env is None else _stop_on_signals(stop):
        budget = f" or {trainer.cfg.max_seconds:g}s" if trainer.cfg.max_seconds else ""
        if leader:
            print(f"training {trainer.task.name} ({trainer.model.num_parameters():,} parameters) from step "
                  f"{trainer.step} to {trainer.cfg.max_steps}{budget}, {batch}; Ctrl-C stops and saves",
                  file=sys.stderr)
        try:
            reason, diverged = trainer.run(stop=stop), None
        except NonFiniteLossError as exc:  # the weights were rolled back: save them, then report
            reason, diverged = "loss not finite", exc
    progress.finish()
    if not leader:
        return EXIT_USER_ERROR if diverged is not None else EXIT_INTERRUPTED if reason == "stopped" else 0
    metrics = trainer.evals[-1] if trainer.evals and trainer.evals[-1]["step"] == trainer.step else trainer.evaluate()
    trainer.callbacks.remove(progress)
    trainer.callbacks.remove(best)
    if probe is not None:
        trainer.callbacks.remove(probe)
        probe.finish(trainer)
    ckpt = checkpoint_from_trainer(trainer, probe.timeline if probe is not None else ())
    if args.no_optimizer:
        ckpt.optimizer_state = None
    snapshots = next((cb for cb in trainer.callbacks if isinstance(cb, SnapshotEvery)), None)
    if snapshots is not None and trainer.step not in snapshots.saved:
        snapshots.save(trainer)  # the curves end at the saved model
    path = save_checkpoint(ckpt, out, overwrite=args.force or same_dir or bool(args.save_every or args.keep_snapshots),
                           half=args.fp16_weights)
    print(f"saved {path}: {trainer.task.name}, step {trainer.step} ({reason}), {trainer.elapsed:.1f}s trained, "
          f"{_metrics_text(metrics)}")
    for rule in (cb for cb in trainer.callbacks if isinstance(cb, StopWhenClean)):
        print(f"stage demo: {rule.note(trainer)}")
    best_ckpt = best.checkpoint(trainer)
    if best_ckpt is not None:
        save_checkpoint(best_ckpt, path / "best", half=args.fp16_weights)
        print(f"saved {path / 'best'}: {best_ckpt.weights}, {_metrics_text(best_ckpt.metrics)}")
    if diverged is not None:
        raise diverged
    return EXIT_INTERRUPTED if reason == "stopped" else 0
