"""The texts a model's dictionaries are read and trained on in the app (our checkpoint's task's own examples, its
generator's streams for the stream tasks, else the model's validation sentences), and where the app saves the
dictionaries it trains."""
from __future__ import annotations

from pathlib import Path

from transformer.dictionaries import STREAM_TASKS, DictionaryError, TrainingTexts, task_texts
from ui.models import ActiveModel
from ui.server import runs_root

PAGE_TEXTS = 300  # texts a feature page reads (a few seconds on our models)
TRAIN_TEXTS = 1000  # texts the app trains on (the shipped induction dictionary's)


def _examples(active: ActiveModel, cap: int) -> TrainingTexts | None:
    pairs = [(s, r) for s, r in active.examples if s.strip()][:cap]
    if not pairs:
        return None
    refs = tuple(r for _, r in pairs) if all(r.strip() for _, r in pairs) else None
    return TrainingTexts(tuple(s for s, _ in pairs), refs, f"{len(pairs):,} of the model's validation sentences")


def model_texts(active: ActiveModel, cap: int = TRAIN_TEXTS, *, examples_first: bool = False) -> TrainingTexts | None:
    """At most `cap` texts of the model's own: its task's (its training examples first; a stream task's streams),
    else its validation sentences. `examples_first`: the validation sentences where it has them (loaded with the
    model, no task to rebuild; a stream task's are cut streams, so its own streams still). None where it has none
    (a Hugging Face model: the CLI's --corpus)."""
    if examples_first and active.task_name not in STREAM_TASKS and (found := _examples(active, cap)) is not None:
        return found
    path = active.option.path
    if path is not None:
        try:
            return task_texts(path, cap)
        except DictionaryError:
            pass
    return _examples(active, cap)


def trained_root() -> Path:
    """Where the app saves the dictionaries it trains (the Features page lists them beside the shipped ones)."""
    return runs_root() / "dictionaries"
