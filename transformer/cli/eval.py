"""`python -m transformer eval MODEL`: a checkpoint's validation metrics (--save: stored as its card's), BLEU/chrF of
any model on aligned files (--data), or a decoder-only model's perplexity on a text (--text-file), as one JSON
object."""
from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from ..analysis import corpus_scores
from ..data import TaskSpec, read_aligned_files
from ..decode import beam_texts, perplexity, score_parallel
from ..model import Seq2SeqTransformer
from ..store import (
    finite_json,
    is_checkpoint_folder,
    load_checkpoint,
    open_model,
    task_for_checkpoint,
    write_metrics,
)
from ..train import evaluate_model
from . import HELP
from .common import Commands, UsageError, add_model_arguments, positive_int


def register(commands: Commands) -> None:
    """Add `eval` and its flags."""
    ev = commands.add_parser("eval", help=HELP["eval"],
                             description="Print one JSON object: a checkpoint's validation metrics (greedy or "
                             "beam), BLEU/chrF of any model on two aligned files (--data), or a decoder-only "
                             "model's perplexity on a text file (--text-file).")
    ev.add_argument("dir", metavar="DIR", help="checkpoint, Hugging Face model folder or hub id")
    ev.add_argument("--n", type=positive_int, help="validation examples to use (default: all)")
    ev.add_argument("--beam", type=positive_int, default=1, metavar="N", help="beam width for BLEU/chrF (1: greedy)")
    ev.add_argument("--length-penalty", type=float, default=0.6, metavar="X", help="beam search: GNMT alpha")
    ev.add_argument("--data", nargs=2, metavar=("SRC", "TGT"), help="score BLEU/chrF on these aligned files")
    ev.add_argument("--text-file", metavar="PATH", help="decoder-only models: perplexity on this text, one "
                    "line at a time (.gz ok)")
    ev.add_argument("--save", action="store_true", help="our checkpoints: store these greedy validation metrics in "
                    "its config.json (the model card's scores), as training's last evaluation did; nothing else "
                    "is written")
    add_model_arguments(ev)
    ev.set_defaults(run=run)


def _check_corpus_files(spec: dict, folder: str) -> None:
    """A corpus checkpoint's validation split is rebuilt from the files its spec names (relative to the repository
    when they were beside it); where they are not on this machine, say so and how to score it anyway."""
    task = TaskSpec.from_dict(spec)
    missing = [f for f in [*task.data, *task.valid_data] if not Path(f).is_file()]
    if missing:
        raise UsageError(f"{folder} was trained on corpus files that are not on this machine ({missing[0]}); "
                         f"score it on files you have: eval {folder} --data SRC TGT")


def read_text_lines(path: str, n: int | None) -> list[str]:
    """The non-empty lines of a text file (.gz read as gzip), at most `n`."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise UsageError(f"{path} is not UTF-8 text ({exc})") from None
    if not lines:
        raise UsageError(f"{path} has no text")
    return lines[:n] if n else lines


def run(args: argparse.Namespace) -> int:
    """`eval`: validation metrics of a checkpoint, or BLEU/chrF of any model on --data, as one JSON object."""
    if args.save and (args.text_file or args.data or args.beam > 1):
        raise UsageError("--save stores a checkpoint's greedy validation metrics: leave out --text-file, --data "
                         "and --beam")
    if args.text_file:
        adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
        lines = read_text_lines(args.text_file, args.n)
        print(json.dumps(finite_json({"model": args.dir, "text_file": args.text_file, **perplexity(adapter, lines)})))
        return 0
    if args.data:
        src, tgt = args.data  # nargs=2: exactly two paths
        pairs = read_aligned_files(src, tgt, max_pairs=args.n)
        if not pairs:
            raise UsageError(f"{src} and {tgt} hold no sentence pairs")
        adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
        scores = score_parallel(adapter, [s for s, _ in pairs], [t for _, t in pairs])
        print(json.dumps(finite_json({"model": args.dir, "data": list(args.data), **scores})))
        return 0
    if Path(args.dir).is_dir() and not is_checkpoint_folder(Path(args.dir)):
        raise UsageError(f"{args.dir} is not one of our checkpoints: give --data SRC TGT to score it")
    ckpt = load_checkpoint(args.dir, load_optimizer=False)
    if args.beam > 1 and not isinstance(ckpt.model, Seq2SeqTransformer):
        raise UsageError(f"--beam searches an encoder-decoder's outputs; {args.dir} is "
                         f"{ckpt.model_config.architecture}: leave --beam out")
    _check_corpus_files(ckpt.task_spec, args.dir)
    task = task_for_checkpoint(ckpt)
    metrics = evaluate_model(ckpt.model, task, args.n or len(task.valid))
    if args.save:  # as the trainer saves its evaluation: with the examples and the step
        write_metrics(args.dir, {**metrics, "step": ckpt.step})
    metrics.pop("examples", None)
    if args.beam > 1 and "bleu" in metrics and isinstance(ckpt.model, Seq2SeqTransformer):
        examples = task.valid[: args.n or len(task.valid)]
        outputs = beam_texts(ckpt.model, task.src_tokenizer, task.tgt_tokenizer, [e.source for e in examples],
                             args.beam, args.length_penalty)
        metrics.update(corpus_scores(outputs, [e.target for e in examples]))
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}, length penalty {args.length_penalty:g}"
    print(json.dumps(finite_json({"checkpoint": str(args.dir), "weights": ckpt.weights, "task": task.name,
                                  "step": ckpt.step, "decoding": decoding, **metrics})))
    return 0
