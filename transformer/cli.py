"""Command line: `python -m transformer train | eval | decode | heads | animate` (docs/cli.md).

Errors a user can cause print one line, ``error: ...``, on stderr and exit with status 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from .analysis import HeadError, corpus_scores, head_mask
from .charts import ChartExportError, ReplayTooLargeError, VideoError
from .cli_animate import cmd_animate, parse_head, video_target, write_decode_video
from .cli_args import EXIT_INTERRUPTED, EXIT_USER_ERROR, UsageError, build_parser
from .cli_beam import beam_entry
from .cli_heads import parse_ablate
from .cli_insides import insides_conflict, insides_entry
from .cli_lens import lens_conflict, lens_entry
from .cli_sampling import print_samples, sampling_from
from .cli_replay import weights_line, write_replay
from .cli_train import cmd_train
from .data import DataError, TaskSpec, TokenizerError, read_aligned_files
from .decode import InputError, beam_texts, greedy_decode, perplexity, score_parallel, teacher_forced
from .adapters import HFModelError
from .model import ConfigError
from .store import (
    CheckpointError,
    finite_json,
    is_checkpoint_folder,
    load_checkpoint,
    open_model,
    task_for_checkpoint,
    write_file_atomic,
)
from .train import DeviceError, NonFiniteLossError, PeerLostError, evaluate_model

USER_ERRORS = (UsageError, ConfigError, DataError, CheckpointError, InputError, TokenizerError, NonFiniteLossError,
               HFModelError, PeerLostError, HeadError, DeviceError, ReplayTooLargeError, VideoError, ChartExportError)


def _check_corpus_files(spec: dict, folder: str) -> None:
    """A corpus checkpoint's validation split is rebuilt from the files its spec names (relative to the repository
    when they were beside it); where they are not on this machine, say so and how to score it anyway."""
    task = TaskSpec.from_dict(spec)
    missing = [f for f in [*task.data, *task.valid_data] if not Path(f).is_file()]
    if missing:
        raise UsageError(f"{folder} was trained on corpus files that are not on this machine ({missing[0]}); "
                         f"score it on files you have: eval {folder} --data SRC TGT")


def cmd_eval(args: argparse.Namespace) -> int:
    """`eval`: validation metrics of a checkpoint, or BLEU/chrF of any model on --data, as one JSON object."""
    if args.text_file:
        lm = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
        lines = read_text_lines(args.text_file, args.n)
        print(json.dumps(finite_json({"model": args.dir, "text_file": args.text_file, **perplexity(lm, lines)})))
        return 0
    if args.data:
        pairs = read_aligned_files(*args.data, max_pairs=args.n)
        if not pairs:
            raise UsageError(f"{args.data[0]} and {args.data[1]} hold no sentence pairs")
        lm = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
        scores = score_parallel(lm, [s for s, _ in pairs], [t for _, t in pairs])
        print(json.dumps(finite_json({"model": args.dir, "data": list(args.data), **scores})))
        return 0
    if Path(args.dir).is_dir() and not is_checkpoint_folder(Path(args.dir)):
        raise UsageError(f"{args.dir} is not one of our checkpoints: give --data SRC TGT to score it")
    ckpt = load_checkpoint(args.dir, load_optimizer=False)
    _check_corpus_files(ckpt.task_spec, args.dir)
    task = task_for_checkpoint(ckpt)
    metrics = evaluate_model(ckpt.model, task, args.n or len(task.valid))
    metrics.pop("examples", None)
    if args.beam > 1 and "bleu" in metrics:
        examples = task.valid[: args.n or len(task.valid)]
        outputs = beam_texts(ckpt.model, task.src_tokenizer, task.tgt_tokenizer, [e.source for e in examples],
                             args.beam, args.length_penalty)
        metrics.update(corpus_scores(outputs, [e.target for e in examples]))
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}, length penalty {args.length_penalty:g}"
    print(json.dumps(finite_json({"checkpoint": str(args.dir), "weights": ckpt.weights, "task": task.name,
                                  "step": ckpt.step, "decoding": decoding, **metrics})))
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    """`decode`: print the greedy (or teacher-forced) output; optionally write the trace JSON, the replay page and
    the step-through as a video."""
    if args.video:  # a bad file name or head fails before the model loads
        video_target(args.video)
        parse_head(args.video_head)
    if insides_conflict(args):  # before the model loads
        raise UsageError(insides_conflict(args))
    lm = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    mask = head_mask(lm, parse_ablate(args.ablate, lm)) if args.ablate else None
    if lens_conflict(args):
        raise UsageError(lens_conflict(args))
    if args.reference is not None:
        result = teacher_forced(lm, args.text, args.reference, top_k=args.top_k, head_mask=mask, residuals=args.lens)
    else:
        result = greedy_decode(lm, args.text, top_k=args.top_k, max_steps=args.max_steps, head_mask=mask,
                               residuals=args.lens, encoder_layer=args.encoder_layer, sampling=sampling_from(args))
    if result.unknown_tokens:
        unknown = " ".join(printable(tok) for tok in result.unknown_tokens)
        print(f"warning: not in the vocabulary (read as <unk>): {unknown}", file=sys.stderr)
    if result.mode in ("greedy", "sampled") and not result.finished:
        print(f"warning: stopped after {len(result.steps)} steps without producing an end token", file=sys.stderr)
    if args.verbose:
        for i, step in enumerate(result.steps, start=1):
            top = "  ".join(f"{tok} {p:.3f}" for tok, p in step.top_k)
            print(f"{i:>3}  {step.token:<12} {step.prob:.3f}   top: {top}", file=sys.stderr)
        print_samples(result)
    lens = lens_entry(lm, result, args, printable)
    tree, beam = beam_entry(lm, args)
    try:
        insides = insides_entry(lm, result, args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.trace_json:
        try:
            write_file_atomic(args.trace_json, json.dumps({**result.to_dict(), **lens, **insides, **beam}))
        except OSError as exc:
            raise UsageError(f"cannot write {args.trace_json}: {exc.strerror or exc}") from None
    if args.html:
        write_replay(args.html, result, lm.name, weights_line(args.dir), tree)
    if args.video:
        write_decode_video(args.video, result, f"{lm.name} · {weights_line(args.dir).lower()}",
                           layer=args.video_layer, head=args.video_head)
    if tree is not None:
        print(tree.hypotheses[0].text)
        return 0
    print(result.output_text)
    return 0


def read_text_lines(path: str, n: int | None) -> list[str]:
    """The non-empty lines of a text file (.gz read as gzip), at most `n`."""
    import gzip
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise UsageError(f"{path} is not UTF-8 text ({exc})") from None
    if not lines:
        raise UsageError(f"{path} has no text")
    return lines[:n] if n else lines


def printable(token: str) -> str:
    """A token safe to print on a terminal: control and direction-changing characters escaped (\\x1b, \\u202e)."""
    return token if token.isprintable() else token.encode("unicode_escape").decode("ascii")


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc).replace("\r", " ").replace("\n", " ").strip() or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = build_parser({"train": cmd_train, "eval": cmd_eval, "decode": cmd_decode,
                             "animate": cmd_animate}).parse_args(argv)
        return args.func(args)
    except (*USER_ERRORS, OSError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("\nerror: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
