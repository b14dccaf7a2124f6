"""The one-pass ablation estimate over a stated sample of a corpus: every head's attribution-patching estimate
(`estimate_head_effects`, `heads --estimate`'s) on each of the corpus's first N sentences, averaged per head.

Each sentence is scored on the output the Attention page would score for it: its reference and </s> when the corpus
is teacher-forced, else the model's own greedy decode (with </s> when it finished). A sentence the model cannot read
or decode is skipped and said; the mean is over the sentences estimated (`sentences`), of the first `asked`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pandas as pd

from ...adapters import InspectableModel
from ...decode import InputError, greedy_decode
from ..patching.ablation import output_ids
from ..patching.head_effects import estimate_head_effects

ESTIMATE_SENTENCES = 50  # the corpus's first sentences estimated on, unless asked otherwise
KEYS = ["kind", "layer", "head", "label"]


@dataclass(frozen=True)
class CorpusEstimate:
    """Per head the mean one-input estimate over the corpus's first `asked` sentences (those read: `sentences`)."""

    frame: pd.DataFrame  # kind, layer, head, label, estimate; largest estimate first
    sentences: int  # sentences the mean is over
    asked: int  # the first `asked` sentences of the corpus were tried
    skipped: tuple[str, ...]  # "sentence i: why" for each one left out
    mode: str  # "greedy" (the model's own output) or "reference" (teacher-forced)

    def caption(self) -> str:
        """What the mean is over, in words."""
        what = "their references" if self.mode == "reference" else "the model's own output"
        left = f" ({len(self.skipped)} of the first {self.asked} skipped)" if self.skipped else ""
        return f"mean over the corpus's first {self.sentences:,} sentence{'s' * (self.sentences != 1)}{left}, on {what}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON `estimate` block: what it is, over how many sentences, and per head its mean."""
        return {"method": "attribution patching (gradient x activation at each head's output), mean over sentences",
                "sentences": self.sentences, "first": self.asked, "mode": self.mode, "skipped": list(self.skipped),
                "heads": [{"label": r.label, "estimate": round(float(r.estimate), 6)} for r in self.frame.itertuples()]}


def sentence_output(adapter: InspectableModel, text: str, reference: str | None = None) -> list[int]:
    """The output ids a sentence is scored on: its reference and </s>, else the model's greedy decode's."""
    if reference is not None:
        return [*adapter.target_ids(reference), min(adapter.end_ids)]
    return output_ids(greedy_decode(adapter, text, top_k=1))


def corpus_estimate(adapter: InspectableModel, sources: Sequence[str], references: Sequence[str] | None = None, *,
                    n: int = ESTIMATE_SENTENCES, progress: Callable[[float], None] | None = None) -> CorpusEstimate:
    """The mean of `estimate_head_effects` over the first `n` sentences of `sources` (teacher-forced on
    `references` when given); `progress(fraction)` after each sentence (it may raise `Cancelled`)."""
    if not adapter.family.decodes:
        raise InputError("an encoder-only model writes no output to estimate against")
    asked = min(n, len(sources))
    frames, skipped = [], []
    for i in range(asked):
        try:
            output = sentence_output(adapter, sources[i], None if references is None else references[i])
            frames.append(estimate_head_effects(adapter, sources[i], output))
        except InputError as exc:
            skipped.append(f"sentence {i + 1}: {exc}")
        if progress is not None:
            progress((i + 1) / asked)
    if not frames:
        raise InputError(f"none of the first {asked} sentences could be estimated"
                         + (f" ({skipped[0]})" if skipped else ""))
    mean = pd.concat(frames).groupby(KEYS, as_index=False, sort=False)["estimate"].mean()
    mean = mean.sort_values("estimate", ascending=False, kind="stable").reset_index(drop=True)
    return CorpusEstimate(mean, len(frames), asked, tuple(skipped),
                          "greedy" if references is None else "reference")
