"""`TaskSpec`: the recipe of a training task, the one thing `make_task` reads and a checkpoint stores.

Data files are stored relative to the repository when they lie beside it (the repository or a folder next to
it, such as `../shared/data`), so a shipped checkpoint names no path of the machine that trained it; a relative
path in a stored spec is resolved against the repository first, then against the working directory.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model import ConfigError
from .subword import DEFAULT_SUBWORD_VOCAB

REPO_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the `transformer` package
# The fields each kind of task uses, in the order a checkpoint stores them (plus what was derived, e.g.
# "valid_is_train"); the others keep their defaults and are not stored.
GENERATED_FIELDS = ("name", "seed", "n_train", "n_valid", "min_len", "max_len")
TOY_FIELDS = ("name", "seed", "n_train", "n_valid", "min_freq")
CORPUS_FIELDS = ("name", "data", "text", "seed", "n_valid", "valid_fraction", "min_freq", "max_pairs",
                 "valid_is_train", "valid_data", "tokenizer", "vocab_size", "joint")
DERIVED_FIELDS = frozenset({"valid_is_train"})


def _paths(value: Any) -> tuple[str, ...]:
    return (str(value),) if isinstance(value, (str, Path)) else tuple(str(p) for p in value)


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """Which task to build and how: generated strings (reverse, copy, sort), the toy grammar, or a corpus.

    Corpus tasks: `data` is one TSV file or two aligned files (or `text`, typed pairs); `valid_data` is the
    validation split instead of a held-out slice of `data`; `tokenizer` "bpe" (default, joint 8k), "unigram"
    or "word". `n_train` None means the task's default (50,000 generated strings, 20,000 toy pairs).
    """

    name: str
    data: tuple[str, ...] = ()
    text: str | None = None
    seed: int = 0
    n_train: int | None = None
    n_valid: int = 500
    min_len: int = 10
    max_len: int = 19
    valid_fraction: float = 0.05
    min_freq: int = 1
    max_pairs: int | None = None
    valid_data: tuple[str, ...] = ()
    tokenizer: str = "bpe"
    vocab_size: int = DEFAULT_SUBWORD_VOCAB
    joint: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _paths(self.data))  # one path or several, always a tuple of str
        object.__setattr__(self, "valid_data", _paths(self.valid_data))

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> "TaskSpec":
        """The spec a checkpoint stored (unknown fields raise ConfigError; derived ones are ignored).

        A corpus spec written before subword tokenizers existed has no "tokenizer" key: it was word-level.
        """
        if not isinstance(spec, dict) or "name" not in spec:
            raise ConfigError('a task spec must be an object with a "name"')
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(spec) - known - DERIVED_FIELDS
        if unknown:
            raise ConfigError(f"unknown task spec field(s): {', '.join(sorted(unknown))}")
        values = {k: v for k, v in spec.items() if k in known}
        if spec["name"] == "corpus":
            values.setdefault("tokenizer", "word")
        for key in ("data", "valid_data"):
            if key in values:
                values[key] = tuple(str(resolve_data_path(p)) for p in _paths(values[key]))
        return cls(**values)

    def to_dict(self, **derived: Any) -> dict[str, Any]:
        """What a checkpoint stores: the fields this kind of task uses (data paths made portable) and `derived`."""
        fields = (CORPUS_FIELDS if self.name == "corpus" else TOY_FIELDS if self.name == "toy-en-de"
                  else GENERATED_FIELDS)
        values = dataclasses.asdict(self) | derived
        values["data"] = [portable_path(p) for p in self.data]
        values["valid_data"] = [portable_path(p) for p in self.valid_data]
        return {k: values[k] for k in fields if k in values}


def portable_path(path: str | Path) -> str:
    """`path` relative to the repository when it lies in the repository or beside it, else absolute."""
    absolute = Path(os.path.abspath(Path(path).expanduser()))  # symlinks kept: `../shared` may be a link
    if absolute.is_relative_to(REPO_ROOT.parent):
        return Path(os.path.relpath(absolute, REPO_ROOT)).as_posix()
    return str(absolute)


def resolve_data_path(path: str | Path) -> Path:
    """A stored data path: absolute as is; relative against the repository if the file is there, else as given."""
    path = Path(path).expanduser()
    if path.is_absolute():
        return path
    in_repo = REPO_ROOT / path
    return in_repo if in_repo.exists() or not path.exists() else path
