"""`python -m transformer train`: build or resume a trainer, train within the budgets, evaluate and save.

Under torchrun with several processes it trains one model with DistributedDataParallel; rank 0 alone prints,
validates and saves (see `transformer.train.distributed`).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import threading
from pathlib import Path

from ..data import TASK_NAMES
from ..model import ARCHITECTURE_NAMES, POSITION_SCHEMES, PRESETS
from ..store import SNAPSHOTS, save_checkpoint
from ..train import (
    DEVICES,
    KEEP_BEST,
    PRECISIONS,
    PROBE_FRAMES,
    CheckpointEvery,
    DistEnv,
    DistributedTrainer,
    KeepBest,
    NonFiniteLossError,
    SnapshotEvery,
    StopWhenClean,
    available_cores,
    checkpoint_from_trainer,
    resolve_device,
    start_process_group,
    stop_process_group,
    torchrun_env,
)
from . import HELP
from .common import EXIT_INTERRUPTED, EXIT_USER_ERROR, Commands, positive_int
from .train_progress import ProgressLine, metrics_text, stop_on_ctrl_c, stop_on_signals
from .train_setup import MODEL_FLAGS, TRAIN_FLAGS, check_out, new_trainer, probe_recorder, resumed_trainer
from .train_stage import check_stage, launch_stage, stage_hint, stage_processes


def register(commands: Commands) -> None:
    """Add `train` and its flags."""
    p = commands.add_parser("train", help=HELP["train"],
                            description="Train a model on a task (or resume a checkpoint) within a step or time "
                            "budget, evaluate it and save the checkpoint; under torchrun, one model on several "
                            "processes.")
    p.add_argument("--task", choices=TASK_NAMES, help="what to learn (not with --resume)")
    p.add_argument("--data", nargs="+", metavar="PATH", help="corpus: one TSV file or two aligned files (.gz ok)")
    p.add_argument("--text-file", metavar="PATH", help="corpus: pairs one a line, TAB or ||| / => / -> between")
    p.add_argument("--out", required=True, metavar="DIR", help="checkpoint directory to write")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--no-optimizer", action="store_true",
                   help="do not store the optimizer state (a smaller checkpoint; resuming restarts Adam's moments)")
    p.add_argument("--resume", metavar="DIR", help="continue training this checkpoint")
    p.add_argument("--save-every", type=positive_int, metavar="N",
                   help="also save --out every N steps, so a crash loses at most N steps")
    p.add_argument("--keep-snapshots", type=positive_int, metavar="N",
                   help="keep the weights every N steps (and at the end) in --out/snapshots/step-NNNNNNN/, none "
                        "overwritten: `heads --corpus FILE --snapshots` gives each head's statistics over training")
    p.add_argument("--preset", choices=list(PRESETS), help="size preset, applied over the task defaults")
    p.add_argument("--stage", action="store_true",
                   help="the stage demo (reverse, toy-en-de): a recipe that trains until the attention picture is "
                        "clean, then stops (docs/training.md); --max-seconds caps it; not with --preset")
    p.add_argument("--steps", type=positive_int, metavar="N",
                   help="total step target (also the LR schedule's horizon)")
    p.add_argument("--max-seconds", type=float, metavar="S", help="time budget for this run")
    p.add_argument("--seed", type=int, metavar="N", help="seed for the data and the training")
    p.add_argument("--n-train", type=positive_int, metavar="N",
                   help="training examples for generated tasks and toy-en-de")
    p.add_argument("--n-valid", type=positive_int, metavar="N", help="validation examples")
    p.add_argument("--max-pairs", type=positive_int, metavar="N", help="corpus: read at most this many pairs")
    p.add_argument("--min-freq", type=positive_int, metavar="N",
                   help="word tasks: keep words seen at least this often")
    p.add_argument("--valid-data", nargs="+", metavar="PATH",
                   help="corpus: validation pairs (one TSV or two aligned files) instead of a held-out slice")
    p.add_argument("--tokenizer", choices=("bpe", "unigram", "word"), help="corpus: tokenizer (default bpe)")
    p.add_argument("--vocab-size", type=int, metavar="N", help="corpus: subword vocabulary size (default 8000)")
    p.add_argument("--separate-vocab", action="store_true", default=None,
                   help="corpus: one subword vocabulary per language instead of a joint one")
    p.add_argument("--no-tie", action="store_true",
                   help="do not tie the embeddings and generator (tied by default with a joint vocabulary)")
    p.add_argument("--fp16-weights", action="store_true", help="store the weights in fp16 (half the size)")
    p.add_argument("--probe", metavar="TEXT", help="the sentence whose attention is recorded while training and "
                   "saved with the checkpoint, for `animate` (default: the task's probe, its first validation source)")
    p.add_argument("--probe-frames", type=int, default=PROBE_FRAMES, metavar="N",
                   help=f"record the probe about N times over the budget (default {PROBE_FRAMES}; 0: no probe)")
    sizes = p.add_argument_group("model (not with --resume)")
    for flag, kind in (("d-model", int), ("heads", int), ("enc-layers", int), ("dec-layers", int), ("d-ff", int),
                       ("dropout", float), ("max-len", int)):
        sizes.add_argument(f"--{flag}", type=kind, metavar="N" if kind is int else "X",
                           help=f"ModelConfig.{MODEL_FLAGS[flag.replace('-', '_')]}")
    sizes.add_argument("--norm", choices=("pre", "post"))
    sizes.add_argument("--architecture", choices=ARCHITECTURE_NAMES,
                       help="encoder-decoder (default); decoder-only: one causal stack of --dec-layers blocks "
                       "over source, separator and target (a prefix LM; loss on the target part); encoder-only: one "
                       "bidirectional stack of --enc-layers blocks over source </s> target </s> with a share of one "
                       "sentence's tokens masked (a masked LM, scored by masked-token accuracy; one joint vocabulary)")
    sizes.add_argument("--positions", choices=POSITION_SCHEMES,
                       help="sinusoidal (default): the paper's table added to the tokens, up to 1,024 positions; "
                       "rope (decoder-only): queries and keys rotated by the position, no table, --max-len up to "
                       "131,072")
    sizes.add_argument("--rope-base", type=float, metavar="X",
                       help="RoPE's base (default 10000): larger turns the slow pairs less per position, so a "
                       "content match holds over longer streams")
    sizes.add_argument("--window", type=int, metavar="N",
                       help="with rope: local layers see only the N latest positions (a sliding window); 0 (default): "
                       "none")
    sizes.add_argument("--global-every", type=int, metavar="K",
                       help="with --window: every K-th layer is global, seeing every position with no positions at "
                       "all (NoPE), as Command A and Llama 4 interleave them")
    sizes.add_argument("--logn-length", type=int, metavar="N",
                       help="decoder-only: a query that sees n > N keys is multiplied by ln n / ln N (log-n scaling), "
                       "so its weights stay as sharp past the trained length; 0 (default): none")
    opt = p.add_argument_group("training")
    for flag, kind in (("batch-size", int), ("lr", float), ("warmup", int), ("label-smoothing", float),
                       ("grad-clip", float), ("weight-decay", float), ("eval-every", int), ("eval-examples", int),
                       ("decay-steps", int)):
        opt.add_argument(f"--{flag}", type=kind, metavar="N" if kind is int else "X",
                         help=f"TrainConfig.{TRAIN_FLAGS[flag.replace('-', '_')]}")
    opt.add_argument("--schedule", choices=("cosine", "constant", "inverse_sqrt"))
    opt.add_argument("--device", choices=DEVICES, default="auto",
                     help="where to train: cuda (each torchrun process on cuda:LOCAL_RANK, nccl), cpu (gloo), or "
                          "auto, cuda when there is a GPU (default auto); checkpoints are saved for the CPU either way")
    opt.add_argument("--precision", choices=PRECISIONS,
                     help="bf16 autocast with fp32 master weights (auto: bf16 where the CPU/GPU supports it)")
    opt.add_argument("--keep-best", choices=KEEP_BEST, default="loss",
                     help="also keep the weights with the best validation loss or BLEU, in DIR/best (default loss)")


    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """`train`: build or resume a trainer, train within the budgets, evaluate, save, print a summary."""
    env = torchrun_env()
    if env is None:
        check_stage(args)
        processes = stage_processes(args)
        if processes > 1 and getattr(args, "argv", None) is not None:  # the stage demo as its recipe's processes
            return launch_stage(args.argv, processes)
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
        check_out(out, args.force or same_dir)
    trainer = (resumed_trainer(args, device) if args.resume
               else new_trainer(args, device, env.world if env is not None else 1))
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
    probe = probe_recorder(args, trainer) if leader else None
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
    with stop_on_ctrl_c(stop) if env is None else stop_on_signals(stop):
        budget = f" or {trainer.cfg.max_seconds:g}s" if trainer.cfg.max_seconds else ""
        if leader:
            n_params = sum(p.numel() for p in trainer.model.parameters())  # what the model's num_parameters() counts
            print(f"training {trainer.task.name} ({n_params:,} parameters) from step "
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
          f"{metrics_text(metrics)}")
    for rule in (cb for cb in trainer.callbacks if isinstance(cb, StopWhenClean)):
        print(f"stage demo: {rule.note(trainer)}")
    best_ckpt = best.checkpoint(trainer)
    if best_ckpt is not None:
        save_checkpoint(best_ckpt, path / "best", half=args.fp16_weights)
        print(f"saved {path / 'best'}: {best_ckpt.weights}, {metrics_text(best_ckpt.metrics)}")
    if diverged is not None:
        raise diverged
    return EXIT_INTERRUPTED if reason == "stopped" else 0
