"""Where `decode` reads its input: TEXT itself, standard input (`-`) or `--input-file FILE` (the whole file as one
input, UTF-8 or gzip-compressed UTF-8); what the decode keeps (`--keep`: auto, maps, store; `keeps_store`); and how a
decode that keeps the attention store runs, with the flags that need maps refused by name."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import BinaryIO

from ..adapters import InspectableModel
from ..data import text_from_bytes
from ..decode import KEEPS, STORE_ABOVE, STORED_STEPS, DecodeResult, greedy_decode, keeps_store
from .common import UsageError

# flags that need the dense maps or another decode, refused at long inputs (the flag, how to tell it was given)
NEEDS_MAPS = (("--reference", lambda a: a.reference is not None), ("--ablate", lambda a: bool(a.ablate)),
              ("--lens", lambda a: bool(getattr(a, "lens", False))), ("--beam", lambda a: a.beam > 1),
              ("--video", lambda a: bool(a.video)),
              ("--internals", lambda a: bool(getattr(a, "internals", None))),
              ("--contributions", lambda a: bool(getattr(a, "contributions", None))),
              ("--encoder-layer", lambda a: getattr(a, "encoder_layer", None) is not None),
              ("--temperature", lambda a: getattr(a, "temperature", None) is not None),
              ("--sample-top-k", lambda a: getattr(a, "sample_top_k", None) is not None),
              ("--top-p", lambda a: getattr(a, "top_p", None) is not None))


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """TEXT (optional with --input-file; `-` reads standard input) and --input-file."""
    p.add_argument("text", metavar="TEXT", nargs="?",
                   help="the input; - reads it from standard input (UTF-8 or gzip), up to the model's own context")
    p.add_argument("--input-file", metavar="FILE", help="read the whole file as one input (UTF-8, or gzip-compressed "
                   "UTF-8 such as FILE.gz), line breaks kept; instead of TEXT")
    p.add_argument("--keep", choices=KEEPS, default="auto",
                   help=f"what the trace keeps: every map, or the attention store (a decoder-only model's prompt, no "
                        f"n x n tensor); auto (default): the store above {STORE_ABOVE:,} prompt tokens")


def read_input(args: argparse.Namespace, stdin: BinaryIO | None = None) -> str:
    """The one input `decode` reads: TEXT, standard input for `-`, or the whole of --input-file."""
    if args.input_file is not None:
        if args.text is not None:
            raise UsageError("give TEXT or --input-file, not both")
        path = Path(args.input_file).expanduser()
        if not path.is_file():
            raise UsageError(f"--input-file: no such file: {args.input_file}")
        return text_from_bytes(path.read_bytes(), args.input_file)
    if args.text is None:
        raise UsageError("the following arguments are required: TEXT (or --input-file FILE, or - for standard input)")
    if args.text == "-":
        return text_from_bytes((stdin or sys.stdin.buffer).read(), "standard input")
    return args.text


def is_long(adapter: InspectableModel, text: str, keep: str = "auto") -> bool:
    """Whether the decode of `text` keeps the attention store (`keeps_store`: by default a decoder-only model's
    prompt of more than STORE_ABOVE tokens)."""
    return keeps_store(adapter, len(adapter.decoder_prefix(adapter.tokenize_source(text))), keep)


def long_decode(adapter: InspectableModel, text: str, args: argparse.Namespace) -> DecodeResult:
    """The stored decode of a long prompt, after refusing by name the flags that need maps."""
    given = [flag for flag, on in NEEDS_MAPS if on(args)]
    if given:
        where = "with --keep store" if args.keep == "store" else f"above {STORE_ABOVE:,} prompt tokens"
        raise UsageError(f"{', '.join(given)}: not available {where} (the decode keeps the attention store, not "
                         "maps); drop the flag or shorten the input")
    return greedy_decode(adapter, text, max_steps=args.max_steps or STORED_STEPS, top_k=args.top_k, keep=args.keep)
