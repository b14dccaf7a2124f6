"""Two decodings of one input side by side: where the outputs part, and how one attention map differs from another.

A difference is taken only where the token axes agree: the source tokens must be the same (same tokenization),
and decoder rows are kept up to the first position where the two decoder inputs differ.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...decode import AttentionTrace


@dataclass(frozen=True)
class AttentionDifference:
    """B's map minus A's over the rows and columns whose tokens agree; rows left out are counted."""

    kind: str
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    a: np.ndarray  # (Q, K) A's weights
    b: np.ndarray  # (Q, K) B's weights
    rows_left_out: int  # query rows of the longer trace past the common prefix

    @property
    def difference(self) -> np.ndarray:
        """(Q, K) B - A."""
        return self.b - self.a

    @property
    def max_abs(self) -> float:
        """The largest |B - A| (0 for identical maps)."""
        return float(np.abs(self.difference).max()) if self.difference.size else 0.0


def first_divergence(a: Sequence[str], b: Sequence[str]) -> int | None:
    """0-based position of the first token where two sequences differ (one ending early counts); None if equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common prefix of two token sequences."""
    split = first_divergence(a, b)
    return len(a) if split is None else split


def attention_difference(trace_a: AttentionTrace, trace_b: AttentionTrace, kind: str, layer: int,
                         head: int | None) -> AttentionDifference:
    """B - A for one kind, layer and head (None = mean), on the token axes the two traces share.

    Raises ValueError when the source tokens differ (the maps' columns would not mean the same thing) and
    IndexError when a model lacks the layer or head.
    """
    if trace_a.source_tokens != trace_b.source_tokens:
        raise ValueError("the two models split the input into different source tokens")
    if trace_a.family_name != trace_b.family_name:
        raise ValueError(f"an {trace_a.family_name} and a {trace_b.family_name} model have different attention "
                         "kinds: compare each on its own")
    family = trace_a.family
    q_a, keys = trace_a.labels(kind)
    q_b, _ = trace_b.labels(kind)
    rows = len(q_a) if kind == family.encoder_kind else common_prefix(q_a, q_b)
    cols = rows if family.causal(kind) else len(keys)
    a = trace_a.matrix(kind, layer, head).detach().float().cpu().numpy()[:rows, :cols]
    b = trace_b.matrix(kind, layer, head).detach().float().cpu().numpy()[:rows, :cols]
    return AttentionDifference(kind, tuple(q_a[:rows]), tuple(keys[:cols]), a, b,
                               max(len(q_a), len(q_b)) - rows)
