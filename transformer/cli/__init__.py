"""The command line, `python -m transformer COMMAND` (docs/cli.md): one module per command.

The commands, in the order `--help` lists them (the registry is COMMANDS below; a test checks this list against it):

    train     train a model and save a checkpoint (train_setup, train_progress, train_stage beside it)
    eval      a checkpoint's validation metrics, BLEU/chrF on aligned files, or perplexity, as one JSON object
    decode    one input's output; the trace JSON, lens, insides, beam tree, replay page, video (decode_*.py)
    heads     which heads matter (ablation, attention vs attribution); --corpus: statistics (heads_corpus)
    patch     activation patching: which activation carries the answer from CLEAN that CORRUPTED lacks
    fill      an encoder-only model's predictions at each mask token
    animate   a saved run's training evolution (its probe frames) as MP4 or GIF
    qk        one attention score taken apart into pairs of residual parts (query part, key part) and terms
    composition  Q-, K- and V-composition between every earlier and later head (from the weights)
    routes    the route of each output token through heads, MLPs and positions (information flow routes)
    reliance  source or prefix: each decode step's reliance on the source, detached steps, omitted tokens; --corpus
    circuit   the circuit carrying an answer: edges scored by EAP-IG or EAP, checked by real edge patching
    dictionary  train (or show) a sparse dictionary of features on one site, as a SAELens folder

A command is a module `NAME.py` here with a docstring, `register(commands)` (adds its parser with
`commands.add_parser("NAME", help=..., description=...)`, its flags, and `set_defaults(run=run)`) and
`run(args) -> int` (the exit status). Helpers only it uses sit beside it as `NAME_*.py`; what several commands share
(the parser, flag types, the model and video flags, --ablate, printing tokens, writing a file) is in common.py.
Adding a command is one new module, its line in COMMANDS and its line in the list above.

Errors a user can cause (USER_ERRORS) print one line, ``error: ...``, on stderr and exit with status 2 (with no
command, that line names every command); Ctrl-C exits 130.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..adapters import HFModelError
from ..analysis import HeadError
from ..charts import ChartExportError, ReplayTooLargeError, VideoError
from ..data import DataError, TokenizerError
from ..decode import InputError
from ..dictionaries import DictionaryError
from ..model import ConfigError
from ..store import CheckpointError
from ..train import DeviceError, NonFiniteLossError, PeerLostError
from . import animate, circuit, composition, decode, dictionary, eval, fill, heads, patch, qk, reliance, routes, train
from .common import EXIT_INTERRUPTED, EXIT_USER_ERROR, Parser, UsageError

COMMANDS = (train, eval, decode, heads, patch, fill, animate, qk, composition, routes, reliance, circuit, dictionary)
USER_ERRORS = (UsageError, ConfigError, DataError, CheckpointError, InputError, TokenizerError, NonFiniteLossError,
               HFModelError, PeerLostError, HeadError, DeviceError, ReplayTooLargeError, VideoError, ChartExportError,
               DictionaryError)


def build_parser() -> argparse.ArgumentParser:
    """The `python -m transformer` parser: every command in COMMANDS registered the same way."""
    parser = Parser(prog="python -m transformer",
                    description="Attention Studio from the command line: train, evaluate, decode and look inside "
                    "models (our checkpoints, Hugging Face folders or hub ids).",
                    epilog="`python -m transformer COMMAND --help` describes a command and its flags; docs/cli.md "
                    "has them all.")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    commands.metavar = "{" + ",".join(commands.choices) + "}"  # the usage line and the no-command error name them
    return parser


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc).replace("\r", " ").replace("\n", " ").strip() or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # a command that relaunches itself (train --stage)
        return args.run(args)
    except (*USER_ERRORS, OSError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("\nerror: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


__all__ = ["COMMANDS", "USER_ERRORS", "build_parser", "main"]
