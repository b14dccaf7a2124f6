"""Where `decode` reads its input: TEXT itself, standard input (`-`) or `--input-file FILE` (the whole file as one
input, UTF-8 or gzip-compressed UTF-8); and how a decoder-only prompt past the store's threshold is decoded (the
attention store, no maps) with the flags that need maps refused by name."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import BinaryIO

from ..adapters import InspectableModel
from ..data import text_from_bytes
from ..decode import STORE_ABOVE, DecodeResult, decode_text
from .common import UsageError

LONG_STEPS = 16  # a long input's steps when --max-steps is not given
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


def is_long(adapter: InspectableModel, text: str) -> bool:
    """Whether a decoder-only model's prompt for `text` has more than STORE_ABOVE tokens (decoded with the store)."""
    return adapter.family.prompt_in_decoder and len(adapter.decoder_prefix(adapter.tokenize_source(text))) > STORE_ABOVE


def long_decode(adapter: InspectableModel, text: str, args: argparse.Namespace) -> DecodeResult:
    """The stored decode of a long prompt, after refusing by name the flags that need maps."""
    given = [flag for flag, on in NEEDS_MAPS if on(args)]
    if given:
        raise UsageError(f"{', '.join(given)}: not available above {STORE_ABOVE:,} prompt tokens (the decode keeps "
                         "the attention store, not maps); drop the flag or shorten the input")
    return decode_text(adapter, text, max_steps=args.max_steps or LONG_STEPS, top_k=args.top_k)
