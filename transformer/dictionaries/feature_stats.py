"""What a dictionary feature does over a corpus's activations: its strongest activations (the examples a feature page
shows, by decile too), how often it fires, and the finder's table over every feature."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd
import torch

from .activations import Activations
from .dictionary import Dictionary

CHUNK = 8192  # rows encoded at once


@dataclass(frozen=True)
class Example:
    """One activation of a feature: the text's index, the 0-based position, its token, the one before (None at the
    first position), the activation."""

    text: int
    position: int
    token: str
    previous: str | None
    activation: float


def encoded(dictionary: Dictionary, activations: Activations) -> torch.Tensor:
    """Every row's feature activations (N, F)."""
    with torch.no_grad():
        return torch.cat([dictionary.encode(activations.values[i:i + CHUNK])
                          for i in range(0, len(activations), CHUNK)]) if len(activations) else torch.zeros(0, 0)


def _example(activations: Activations, row: int, value: float) -> Example:
    text, pos = activations.texts[row], activations.positions[row]
    before = row - 1 if row > 0 and activations.texts[row - 1] == text and pos > 0 else None
    return Example(text, pos, activations.tokens[row], None if before is None else activations.tokens[before], value)


def top_examples(codes: torch.Tensor, activations: Activations, feature: int, n: int = 20) -> list[Example]:
    """The feature's `n` strongest activations (positive only), strongest first; `codes` from `encoded`."""
    column = codes[:, feature]
    values, rows = column.topk(min(n, len(column)))
    return [_example(activations, int(r), float(v)) for v, r in zip(values, rows, strict=True) if v > 0]


def decile_examples(codes: torch.Tensor, activations: Activations, feature: int, per_decile: int = 3
                    ) -> dict[int, list[Example]]:
    """Examples from each tenth of the feature's range of activations (decile 9: the top), `per_decile` each, the
    strongest of each tenth first."""
    column = codes[:, feature]
    top = float(column.max()) if len(column) else 0.0
    out: dict[int, list[Example]] = {}
    if top <= 0:
        return out
    for decile in range(9, -1, -1):
        low, high = top * decile / 10, top * (decile + 1) / 10
        rows = ((column > low) & (column <= high)).nonzero().flatten()
        if len(rows):
            order = column[rows].argsort(descending=True)[:per_decile]
            out[decile] = [_example(activations, int(rows[i]), float(column[rows[i]])) for i in order]
    return out


def feature_frame(dictionary: Dictionary, codes: torch.Tensor, activations: Activations, top_tokens: int = 3
                  ) -> pd.DataFrame:
    """The finder's table, one row per feature: `feature` (0-based), `frequency` (share of tokens it fires on),
    `max_activation`, `mean_activation` (where it fires), `top_tokens` (its strongest activations' commonest tokens)."""
    fired = codes > 0
    counts = fired.sum(0)
    n = max(len(codes), 1)
    maxima = codes.max(0).values if len(codes) else torch.zeros(dictionary.n_features)
    means = codes.sum(0) / counts.clamp_min(1)
    tokens = []
    for f in range(dictionary.n_features):
        best = top_examples(codes, activations, f, 20) if counts[f] else []
        tokens.append(" ".join(t for t, _ in Counter(e.token for e in best).most_common(top_tokens)))
    return pd.DataFrame({"feature": range(dictionary.n_features), "frequency": (counts.float() / n).tolist(),
                         "max_activation": maxima.tolist(), "mean_activation": means.tolist(),
                         "top_tokens": tokens})


def decile_counts(codes: torch.Tensor, feature: int) -> dict[int, int]:
    """How many tokens fall in each tenth of the feature's range of activations (0 excluded), decile 9 the top."""
    column = codes[:, feature]
    top = float(column.max()) if len(column) else 0.0
    if top <= 0:
        return {d: 0 for d in range(10)}
    deciles = (column[column > 0] / top * 10).ceil().clamp(1, 10).long() - 1
    return {d: int((deciles == d).sum()) for d in range(10)}
