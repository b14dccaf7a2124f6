"""What the commands share: the parser (errors become one line), exit statuses, flag types, the model and video flags,
`--ablate`, and the output helpers (printable tokens, files written atomically)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:  # the library is imported by the functions that use it: `--help` and `train` need none of it
    from ..adapters import InspectableModel
    from ..model import Head

EXIT_USER_ERROR, EXIT_INTERRUPTED = 2, 130
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # what `register` adds its parser to


class UsageError(Exception):
    """The command line itself is wrong (bad flag, conflicting options)."""


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors become UsageError (one line) instead of usage text and exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see --help)")


def positive_int(text: str) -> int:
    """A flag's value that must be 1 or more."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """A flag's value that must be 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """--prefix, --max-params and --chat: how `eval` and `decode` open a model."""
    from ..adapters import DEFAULT_MAX_PARAMS

    p.add_argument("--prefix", default="", help="prepended to every source (T5 task prefix, e.g. "
                   "'translate English to German: ')")
    p.add_argument("--max-params", type=positive_int, default=DEFAULT_MAX_PARAMS, metavar="N",
                   help=f"refuse Hugging Face models above N parameters (default {DEFAULT_MAX_PARAMS:,})")
    p.add_argument("--chat", action="store_true",
                   help="decoder-only models: format each input with the tokenizer's chat template")


def add_video_view_arguments(p: argparse.ArgumentParser, prefix: str) -> None:
    """--[prefix]layer and --[prefix]head: the map a video shows."""
    p.add_argument(f"--{prefix}layer", type=positive_int, default=1, metavar="N",
                   help="the decoder layer the video shows, from 1 (default 1)")
    p.add_argument(f"--{prefix}head", default="mean", metavar="N|mean",
                   help="the head the video shows, from 1, or mean (default mean)")


def video_head(text: str | None) -> int | None:
    """A video's head: a 1-based number, or "mean" (None: the mean of heads), as a 0-based head or None."""
    if text is None or text.strip().lower() == "mean":
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(f"a head is a number from 1 or 'mean', not {text!r}")
    return int(text) - 1


def video_target(path: str) -> str:
    """The format `path` asks for ("mp4" or "gif"), checked before any frame is drawn: its extension and folder."""
    from ..charts import video_format

    fmt = video_format(path)
    if not Path(path).expanduser().resolve().parent.is_dir():
        raise UsageError(f"cannot write {path}: its folder does not exist")
    return fmt


def parse_ablate(values: list[str] | None, adapter: InspectableModel) -> list[Head]:
    """Heads named by `--ablate` (repeatable, comma-separated), checked against the model; HeadError if wrong."""
    from ..analysis import parse_head as parse_ablated_head

    labels = [part for value in values or [] for part in value.split(",")]
    return [parse_ablated_head(label, adapter) for label in labels]


def write_output(path: str, data: str | bytes) -> None:
    """Write a file the command was asked for, atomically; UsageError (one line) when it cannot be written."""
    from ..store import write_file_atomic

    try:
        write_file_atomic(path, data)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def printable(token: str) -> str:
    """A token safe to print on a terminal: control and direction-changing characters escaped (\\x1b, \\u202e)."""
    return token if token.isprintable() else token.encode("unicode_escape").decode("ascii")
