"""Perplexity of a language model on plain text, in the model's own tokens (what `eval --text-file` reports)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from ..adapters import InspectableModel
from .greedy import InputError

COUNTED = ("the model's own tokens: each line tokenized on its own as the model's tokenizer does (its BOS "
           "included where it adds one); every token after a line's first is predicted and counted")


def perplexity(adapter: InspectableModel, lines: Sequence[str]) -> dict[str, Any]:
    """exp(mean negative log-likelihood per predicted token) of `adapter` over `lines`, no weights captured; a line
    longer than the model reads is scored in consecutive windows. InputError for a model that does not read its
    input as the start of its own sequence (an encoder-decoder) or text with nothing to predict."""
    if not adapter.family.prompt_in_decoder:
        raise InputError(f"perplexity on plain text needs a decoder-only language model; {adapter.name} is "
                         f"an {adapter.family.name} model (score it with --data SRC TGT)")
    total, count, used = 0.0, 0, 0
    window = adapter.max_target_len
    with adapter.running():
        for line in lines:
            ids = list(adapter.tokenize_source(line).ids) if line.strip() else []
            if len(ids) < 2:
                continue
            used += 1
            for start in range(0, len(ids) - 1, window - 1):
                chunk = torch.tensor([ids[start: start + window]])
                logits = adapter.teacher_logits(adapter.network, chunk, chunk)[0, :-1].float()  # (n - 1, V)
                total -= float(logits.log_softmax(-1).gather(-1, chunk[0, 1:, None]).sum())
                count += chunk.shape[1] - 1
    if count == 0:
        raise InputError("the text has no line of two or more tokens: nothing to predict")
    return {"perplexity": math.exp(total / count), "nll_per_token": total / count, "tokens": count, "lines": used,
            "counted": COUNTED}
