"""Corpus scores of any `InspectableModel` on parallel text: sacrebleu BLEU and chrF of greedy outputs."""
from __future__ import annotations

from typing import Sequence

from ..adapters import InspectableModel

EVAL_BATCH = 32


def score_parallel(adapter: InspectableModel, sources: Sequence[str], references: Sequence[str],
                   batch_size: int = EVAL_BATCH) -> dict[str, float | int]:
    """{"bleu", "chrf", "n"} of `adapter`'s greedy outputs for `sources` against `references` (same length)."""
    import sacrebleu
    if len(sources) != len(references) or not sources:
        raise ValueError("need the same, non-zero number of sources and references")
    outputs: list[str] = []
    for i in range(0, len(sources), batch_size):
        outputs += adapter.translate(sources[i: i + batch_size])
    return {"bleu": sacrebleu.corpus_bleu(outputs, [list(references)]).score,
            "chrf": sacrebleu.corpus_chrf(outputs, [list(references)]).score, "n": len(sources)}
