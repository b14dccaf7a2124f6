"""What a dictionary trains on: a user's text file (read as `heads --corpus` reads it, with a cap of its own), or for
our checkpoints the task's own examples (its generator's streams for induction and recall, its sentences and
references for reverse, sort, the toy English->German sentences and a trained corpus's files)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..data import CorpusError, DataError, read_corpus
from ..model import ConfigError
from ..store import CheckpointError, is_checkpoint_folder, load_checkpoint, task_for_checkpoint
from .sites import DictionaryError

CORPUS_LINES = 5000  # the cap: a 3,000-line file is read whole
STREAM_TASKS = ("induction", "recall")  # an empty prompt continued by the stream: the stream is the text


@dataclass(frozen=True)
class TrainingTexts:
    """The texts, their references (None: the model's own output is teacher-forced), and where they came from."""

    texts: tuple[str, ...]
    references: tuple[str, ...] | None
    described: str


def corpus_texts(path: str | Path, cap: int = CORPUS_LINES) -> TrainingTexts:
    """A text file's sentences (source<TAB>reference lines keep their references); DictionaryError in one line."""
    try:
        corpus = read_corpus(path, cap=cap)
    except CorpusError as exc:
        raise DictionaryError(str(exc)) from None
    return TrainingTexts(corpus.sources, corpus.references, corpus.describe())


def task_texts(model: str | Path, cap: int = CORPUS_LINES) -> TrainingTexts:
    """Our checkpoint's task's training examples (at most `cap`); DictionaryError where the model has no task (a
    Hugging Face model: give --corpus)."""
    if not is_checkpoint_folder(Path(model)):
        raise DictionaryError(f"{model} is not one of our checkpoints: it has no task to draw texts from; give "
                              "--corpus FILE (one sentence a line)")
    try:
        ckpt = load_checkpoint(model, load_optimizer=False, load_frames=False)
        task = task_for_checkpoint(ckpt)
    except (CheckpointError, ConfigError, DataError, OSError) as exc:
        raise DictionaryError(f"{model}: its task's texts cannot be rebuilt ({exc}); give --corpus FILE") from None
    examples = (task.train + task.valid)[:cap]
    if task.name in STREAM_TASKS:
        return TrainingTexts(tuple(ex.target for ex in examples), None, f"{len(examples):,} {task.name} streams")
    return TrainingTexts(tuple(ex.source for ex in examples), tuple(ex.target for ex in examples),
                         f"{len(examples):,} {task.name} examples with references")
