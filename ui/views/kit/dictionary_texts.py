"""The texts a model's dictionaries are read and trained on in the app (our checkpoint's task's own examples, its
generator's streams for the stream tasks, else the model's validation sentences), and where the app saves the
dictionaries it trains."""
from __future__ import annotations

from pathlib import Path

from transformer.dictionaries import DictionaryError, TrainingTexts, task_texts
from ui.models import ActiveModel
from ui.server import runs_root

PAGE_TEXTS = 300  # texts a feature page reads (a few seconds on our models)
TRAIN_TEXTS = 1000  # texts the app trains on (the shipped induction dictionary's)


def model_texts(active: ActiveModel, cap: int = TRAIN_TEXTS) -> TrainingTexts | None:
    """At most `cap` texts of the model's own; None where it has none (a Hugging Face model: the CLI's --corpus)."""
    path = active.option.path
    if path is not None:
        try:
            return task_texts(path, cap)
        except DictionaryError:
            pass
    pairs = [(s, r) for s, r in active.examples if s.strip()][:cap]
    if not pairs:
        return None
    refs = tuple(r for _, r in pairs) if all(r.strip() for _, r in pairs) else None
    return TrainingTexts(tuple(s for s, _ in pairs), refs, f"{len(pairs):,} of the model's validation sentences")


def trained_root() -> Path:
    """Where the app saves the dictionaries it trains (the Features page lists them beside the shipped ones)."""
    return runs_root() / "dictionaries"
