"""Standard corpus scores: sacrebleu BLEU and chrF on detokenized, cased text against the raw references."""
from __future__ import annotations

from typing import Any, Sequence


def corpus_scores(outputs: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """BLEU (13a tokenizer, cased) and chrF of `outputs` against `references`, each with its sacrebleu signature."""
    from sacrebleu.metrics import BLEU, CHRF  # imported lazily: only word tasks are scored this way

    if len(outputs) != len(references):
        raise ValueError(f"{len(outputs)} outputs but {len(references)} references")
    bleu, chrf = BLEU(), CHRF()
    return {"bleu": bleu.corpus_score(list(outputs), [list(references)]).score,
            "chrf": chrf.corpus_score(list(outputs), [list(references)]).score,
            "bleu_signature": f"BLEU|{bleu.get_signature().format()}",
            "chrf_signature": f"chrF2|{chrf.get_signature().format()}"}
