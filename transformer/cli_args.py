"""The command line's arguments: flags, the parser (errors become one line) and the flag tables."""
from __future__ import annotations

import argparse
from typing import Callable, Mapping

from .charts import SECONDS_PER_FRAME
from .cli_fill import add_fill_parser
from .cli_heads import add_heads_parser
from .cli_insides import add_insides_arguments
from .cli_patch import add_patch_parser
from .cli_lens import add_lens_arguments
from .cli_sampling import add_sampling_arguments
from .data import TASK_NAMES
from .adapters import DEFAULT_MAX_PARAMS
from .model import ARCHITECTURE_NAMES, PRESETS
from .train import (
    DEVICES,
    KEEP_BEST,
    PRECISIONS,
    PROBE_FRAMES,
)

MODEL_FLAGS = {"d_model": "d_model", "heads": "n_heads", "enc_layers": "n_encoder_layers",
               "dec_layers": "n_decoder_layers", "d_ff": "d_ff", "dropout": "dropout", "norm": "norm",
               "max_len": "max_len", "architecture": "architecture"}
TRAIN_FLAGS = {"batch_size": "batch_size", "lr": "lr", "warmup": "warmup_steps", "label_smoothing": "label_smoothing",
               "grad_clip": "grad_clip", "weight_decay": "weight_decay", "schedule": "schedule",
               "eval_every": "eval_every", "eval_examples": "eval_examples", "precision": "precision",
               "decay_steps": "decay_steps"}
TASK_FLAGS = ("task", "data", "text_file", "n_train", "n_valid", "max_pairs", "min_freq", "valid_data", "tokenizer",
              "vocab_size", "separate_vocab")
EXIT_USER_ERROR, EXIT_INTERRUPTED = 2, 130


class UsageError(Exception):
    """The command line itself is wrong (bad flag, conflicting options)."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors become UsageError (one line) instead of usage text and exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see --help)")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", choices=TASK_NAMES, help="what to learn (not with --resume)")
    p.add_argument("--data", nargs="+", metavar="PATH", help="corpus: one TSV file or two aligned files (.gz ok)")
    p.add_argument("--text-file", metavar="PATH", help="corpus: pairs one a line, TAB or ||| / => / -> between")
    p.add_argument("--out", required=True, metavar="DIR", help="checkpoint directory to write")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--no-optimizer", action="store_true",
                   help="do not store the optimizer state (a smaller checkpoint; resuming restarts Adam's moments)")
    p.add_argument("--resume", metavar="DIR", help="continue training this checkpoint")
    p.add_argument("--save-every", type=_positive_int, metavar="N",
                   help="also save --out every N steps, so a crash loses at most N steps")
    p.add_argument("--keep-snapshots", type=_positive_int, metavar="N",
                   help="keep the weights every N steps (and at the end) in --out/snapshots/step-NNNNNNN/, none "
                        "overwritten: `heads --corpus FILE --snapshots` gives each head's statistics over training")
    p.add_argument("--preset", choices=list(PRESETS), help="size preset, applied over the task defaults")
    p.add_argument("--stage", action="store_true",
                   help="the stage demo (reverse, toy-en-de): a recipe that trains until the attention picture is "
                        "clean, then stops (docs/training.md); --max-seconds caps it; not with --preset")
    p.add_argument("--steps", type=_positive_int, metavar="N",
                   help="total step target (also the LR schedule's horizon)")
    p.add_argument("--max-seconds", type=float, metavar="S", help="time budget for this run")
    p.add_argument("--seed", type=int, metavar="N", help="seed for the data and the training")
    p.add_argument("--n-train", type=_positive_int, metavar="N",
                   help="training examples for generated tasks and toy-en-de")
    p.add_argument("--n-valid", type=_positive_int, metavar="N", help="validation examples")
    p.add_argument("--max-pairs", type=_positive_int, metavar="N", help="corpus: read at most this many pairs")
    p.add_argument("--min-freq", type=_positive_int, metavar="N",
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


def _add_model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prefix", default="", help="prepended to every source (T5 task prefix, e.g. "
                   "'translate English to German: ')")
    p.add_argument("--max-params", type=_positive_int, default=DEFAULT_MAX_PARAMS, metavar="N",
                   help=f"refuse Hugging Face models above N parameters (default {DEFAULT_MAX_PARAMS:,})")
    p.add_argument("--chat", action="store_true",
                   help="decoder-only models: format each input with the tokenizer's chat template")


def _add_video_view_arguments(p: argparse.ArgumentParser, prefix: str) -> None:
    """--[prefix]layer and --[prefix]head: the map a video shows."""
    p.add_argument(f"--{prefix}layer", type=_positive_int, default=1, metavar="N",
                   help="the decoder layer the video shows, from 1 (default 1)")
    p.add_argument(f"--{prefix}head", default="mean", metavar="N|mean",
                   help="the head the video shows, from 1, or mean (default mean)")


def _add_animate_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = commands.add_parser("animate", help="a saved run's training evolution (its probe frames) as MP4 or GIF")
    p.add_argument("dir", metavar="RUN_DIR", help="a checkpoint saved with probe frames (train, or the Train page)")
    p.add_argument("--out", required=True, metavar="FILE", help="the video to write: FILE.mp4 (H.264) or FILE.gif")
    _add_video_view_arguments(p, "")
    p.add_argument("--seconds-per-frame", type=float, default=SECONDS_PER_FRAME, metavar="S",
                   help=f"how long each frame shows (default {SECONDS_PER_FRAME:g})")
    return p


def build_parser(runners: Mapping[str, Callable[[argparse.Namespace], int]]) -> argparse.ArgumentParser:
    """The `python -m transformer` argument parser; `runners` maps train, eval, decode and animate to the functions
    that run them."""
    parser = _Parser(prog="python -m transformer", description="Train, evaluate and decode with Attention Studio "
                     "models from the command line.")
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{train,eval,decode,heads,fill,patch,animate}")
    train = commands.add_parser("train", help="train a model and save a checkpoint")
    _add_train_arguments(train)
    train.set_defaults(func=runners["train"])
    ev = commands.add_parser("eval", help="print validation metrics of a checkpoint as one JSON object")
    ev.add_argument("dir", metavar="DIR", help="checkpoint, Hugging Face model folder or hub id")
    ev.add_argument("--n", type=_positive_int, help="validation examples to use (default: all)")
    ev.add_argument("--beam", type=_positive_int, default=1, metavar="N", help="beam width for BLEU/chrF (1: greedy)")
    ev.add_argument("--length-penalty", type=float, default=0.6, metavar="X", help="beam search: GNMT alpha")
    ev.add_argument("--data", nargs=2, metavar=("SRC", "TGT"), help="score BLEU/chrF on these aligned files")
    ev.add_argument("--text-file", metavar="PATH", help="decoder-only models: perplexity on this text, one "
                    "line at a time (.gz ok)")
    _add_model_arguments(ev)
    ev.set_defaults(func=runners["eval"])
    dec = commands.add_parser("decode", help="greedy-decode one input and print the output")
    dec.add_argument("dir", metavar="DIR", help="checkpoint, Hugging Face model folder or hub id")
    dec.add_argument("text", metavar="TEXT")
    dec.add_argument("--top-k", type=_positive_int, default=5, help="candidates recorded per step")
    dec.add_argument("--max-steps", type=_positive_int, help="stop after this many output tokens")
    dec.add_argument("--reference", help="teacher-force this target instead of decoding greedily")
    dec.add_argument("--trace-json", metavar="PATH", help="write the trace JSON (tokens, steps, attention) here")
    dec.add_argument("--html", metavar="PATH", help="write one self-contained HTML page that replays the decode "
                     "step by step, offline")
    dec.add_argument("--video", metavar="FILE", help="write the step-through as a video, FILE.mp4 (H.264) or FILE.gif: "
                     "1920x1080, a second a step, the map of --video-layer and --video-head beside the top-k")
    _add_video_view_arguments(dec, "video-")
    dec.add_argument("--verbose", action="store_true", help="print each step's token, probability and top-k")
    dec.add_argument("--beam", type=_positive_int, default=1, metavar="N",
                     help="beam width: print the best beam hypothesis; --trace-json also gets the beam tree (the "
                          "trace itself stays greedy); every family")
    dec.add_argument("--length-penalty", type=float, default=0.6, metavar="X",
                     help="beam search: GNMT alpha (our models; Hugging Face ones use their generation config)")
    _add_model_arguments(dec)
    dec.add_argument("--ablate", action="append", metavar="HEADS",
                     help="switch heads off, e.g. cross:L1H2,enc:L2H1 (1-based; repeatable)")
    add_lens_arguments(dec, _positive_int)
    add_sampling_arguments(dec)
    add_insides_arguments(dec)
    dec.set_defaults(func=runners["decode"])
    add_heads_parser(commands, _positive_int)
    add_patch_parser(commands, _positive_int)
    add_fill_parser(commands, _positive_int)
    _add_animate_parser(commands).set_defaults(func=runners["animate"])
    return parser
