"""What a task knows about any source text: its correct output, the gold alignment of that output, and how long
an answer is.

Generated tasks (reverse, copy, sort) and the toy grammar know the first two; corpora know neither. Callers (the
app's pages, evaluation, the decode defaults) ask here instead of branching on task names themselves.
"""
from __future__ import annotations

from . import toy_en_de
from .examples import GoldSource
from .recall import RECALL_VALUE
from .tasks import gold_alignment, gold_sources
from .tokenizers import Tokenizer


def answer_steps(task_name: object) -> int | None:
    """How many tokens a decode of the task's model gives when the caller does not say: a recall stream's answer (a
    key's value: at most `RECALL_VALUE` symbols; past it the stream is filler no model can predict); None for a
    task whose model decodes as long as its own default says."""
    return RECALL_VALUE if task_name == "recall" else None


def known_output(task_name: str, source: str) -> str | None:
    """The correct output for `source`, or None when the task cannot know it (a corpus, text outside a grammar)."""
    positions = gold_alignment(task_name, source)
    if positions is not None:
        return "".join(source[i] for i in positions if i is not None)
    if task_name == "toy-en-de":
        try:
            return toy_en_de.translate(source).target
        except ValueError:
            return None
    return None


def known_alignment(task_name: str, source: str, src_tokenizer: Tokenizer | None = None
                    ) -> tuple[GoldSource, ...] | None:
    """Source index (or, for a repeated letter in `sort`, indices) of each token of the correct output, in the
    units `src_tokenizer` splits `source` into (when given); None when the task cannot know it."""
    gold = gold_sources(task_name, source)
    if gold is not None or task_name != "toy-en-de":
        return gold
    try:
        example = toy_en_de.translate(source)
    except ValueError:
        return None
    if src_tokenizer is not None and len(src_tokenizer.split(source)) != len(example.source.split()):
        return None  # the model reads the text in other units than the grammar's words
    return example.alignment
