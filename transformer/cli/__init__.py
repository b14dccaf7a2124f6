"""The command line, `python -m transformer COMMAND` (docs/cli.md): one module per command.

The commands, in the order `--help` lists them (the registry is NAMES below; a test checks this list against it):

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
`commands.add_parser("NAME", help=HELP["NAME"], description=...)`, its flags, and `set_defaults(run=run)`) and
`run(args) -> int` (the exit status). Helpers only it uses sit beside it as `NAME_*.py`; what several commands share
(the parser, flag types, the model and video flags, --ablate, printing tokens, writing a file) is in common.py.
Adding a command is one new module, its name in NAMES, its help line in HELP and its line in the list above.

A process imports only the module of the command it runs (`--help` lists the others from HELP): `heads` does not
pay for the charts, `train` (each torchrun rank) not for the analysis, and `--help` not even for torch. So this
package and common.py import no part of the library at the top; COMMANDS (every module) is imported when asked.

Errors a user can cause (USER_ERRORS) print one line, ``error: ...``, on stderr and exit with status 2 (with no
command, that line names every command); Ctrl-C exits 130.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType
from typing import Sequence

from .common import EXIT_INTERRUPTED, EXIT_USER_ERROR, Parser

NAMES = ("train", "eval", "decode", "heads", "patch", "fill", "animate", "qk", "composition", "routes", "reliance",
         "circuit", "dictionary")
HELP = {  # the line `--help` shows for each command (its module's add_parser says help=HELP[name])
    "train": "train a model and save a checkpoint",
    "eval": "print validation metrics of a checkpoint as one JSON object",
    "decode": "greedy-decode one input and print the output",
    "heads": "which heads matter: ablate each head in turn and compare attention with attribution, or (--corpus) "
             "every head's statistics over a corpus",
    "patch": "activation patching: which activation carries the answer from CLEAN that CORRUPTED lacks",
    "fill": "an encoder-only model's predictions at each mask token",
    "animate": "a saved run's training evolution (its probe frames) as MP4 or GIF",
    "qk": "one attention score taken apart into pairs of residual parts",
    "composition": "Q-, K- and V-composition between every earlier and later head",
    "routes": "the route of each output token through heads, MLPs and positions",
    "reliance": "source or prefix: each decode step's reliance on the source; detached steps, omitted source tokens; "
                "a corpus ranked",
    "circuit": "the circuit (heads, MLPs and the edges between them) that carries the answer from CLEAN that "
               "CORRUPTED lacks",
    "dictionary": "train or show a sparse dictionary (SAELens folder) on one site",
}
# (module, class): a user's mistake, one line and status 2; each named by the module that defines it, which a process
# has imported whenever one can have been raised
_USER_ERRORS = (
    ("transformer.cli.common", "UsageError"),
    ("transformer.model.config", "ConfigError"),
    ("transformer.data.corpus_files", "DataError"),
    ("transformer.store.checkpoint_format", "CheckpointError"),
    ("transformer.decode.errors", "InputError"),
    ("transformer.data.tokenizers", "TokenizerError"),
    ("transformer.train.trainer", "NonFiniteLossError"),
    ("transformer.adapters.errors", "HFModelError"),
    ("transformer.train.distributed", "PeerLostError"),
    ("transformer.model.head", "HeadError"),
    ("transformer.train.device", "DeviceError"),
    ("transformer.charts.replay_bundle", "ReplayTooLargeError"),
    ("transformer.charts.video", "VideoError"),
    ("transformer.charts.export", "ChartExportError"),
    ("transformer.dictionaries.sites", "DictionaryError"),
)


def command_module(name: str) -> ModuleType:
    """The module of one command (imported on first use: a process pays only for the command it runs)."""
    return importlib.import_module(f"{__name__}.{name}")


def __getattr__(name: str) -> object:
    """COMMANDS (every command's module, in NAMES' order) and USER_ERRORS (every error class), imported when asked."""
    if name == "COMMANDS":
        return tuple(command_module(n) for n in NAMES)
    if name == "USER_ERRORS":
        return tuple(getattr(importlib.import_module(module), cls) for module, cls in _USER_ERRORS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _loaded_user_errors() -> tuple[type[BaseException], ...]:
    """The error classes of USER_ERRORS whose modules this process imported (only those can have been raised)."""
    return tuple(getattr(sys.modules[module], cls) for module, cls in _USER_ERRORS
                 if module in sys.modules and hasattr(sys.modules[module], cls))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `python -m transformer` parser: every command of NAMES listed with its help line; `command`'s module (or
    every module, with None) registers its own parser and flags, the others only their line."""
    parser = Parser(prog="python -m transformer",
                    description="Attention Studio from the command line: train, evaluate, decode and look inside "
                    "models (our checkpoints, Hugging Face folders or hub ids).",
                    epilog="`python -m transformer COMMAND --help` describes a command and its flags; docs/cli.md "
                    "has them all.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name in NAMES:
        if command is None or name == command:
            command_module(name).register(commands)
        else:
            commands.add_parser(name, help=HELP[name])
    commands.metavar = "{" + ",".join(commands.choices) + "}"  # the usage line and the no-command error name them
    return parser


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc).replace("\r", " ").replace("\n", " ").strip() or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args_in if not a.startswith("-")), "")  # the top level has no flag taking a value
    try:
        args = build_parser(command if command in NAMES else "").parse_args(args_in)
        args.argv = args_in  # a command that relaunches itself (train --stage)
        return args.run(args)
    except KeyboardInterrupt:
        print("\nerror: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if not isinstance(exc, (*_loaded_user_errors(), OSError)):
            raise
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR


__all__ = ["COMMANDS", "HELP", "NAMES", "USER_ERRORS", "build_parser", "command_module", "main"]
