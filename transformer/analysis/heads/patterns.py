"""A pattern label per head from a sample of its rows: the last `WINDOW` query rows of one input, as MInference
(Jiang et al. 2024, "MInference 1.0", §3: the pattern of each head is found offline from the last 64 queries)
does. Each pattern has a score, a share of the row's weight averaged over the sampled rows (0..1):

| pattern | score | kinds | source |
|---|---|---|---|
| induction | weight on the key after the query's earlier occurrence (r r) | causal | Olsson et al. 2022 |
| retrieval | Wu et al. 2024's retrieval score (copy events at a needle; retrieval.py) | causal | Wu et al. 2024 |
| previous-token | weight on key q − 1 | self-attention | Voita et al. 2019; Olsson et al. 2022 |
| anti-diagonal | share of rows whose largest weight lies on the best line q + k = c (a reversal) | cross | — |
| diagonal | share of rows whose top weight is on the best line q − k = o (a copy) | every kind | MInference's "slash" |
| first-token sink | weight on the first token and specials (`first` + `special`) | every kind | Xiao et al. 2024 |
| local | weight within |k − q| ≤ `LOCAL` | self-attention | MInference's "A-shape" |
| vertical | weight on the `VERTICAL` keys (not first, not special) most attended | any kind | MInference's "vertical" |

The label is the first pattern of this table whose score reaches its threshold (`THRESHOLDS`), else "mixed". The
induction and previous-token labels also go to a kind's standout head by that score (its strongest, at least 0.1 and
3 times the kind's median; `standouts`), as a small model's circuit heads may stay under 0.5.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

import pandas as pd
import torch
from torch import Tensor

from ...decode import sink_positions
from ...model import Head

WINDOW = 64  # the last query rows a head's pattern is read from
LOCAL = 3  # keys within this distance are local
VERTICAL = 4  # the keys a vertical head attends to
THRESHOLDS = {"induction": 0.3, "retrieval": 0.1, "previous-token": 0.5, "anti-diagonal": 0.5, "diagonal": 0.5,
              "first-token sink": 0.5, "local": 0.5, "vertical": 0.5}
PATTERNS = (*THRESHOLDS, "mixed")
STANDOUT = ("induction", "previous-token")  # circuit patterns also named for a kind's standout head
STANDOUT_FLOOR, STANDOUT_RATIO = 0.1, 3.0
SCORE_COLUMNS = {"induction": "induction", "retrieval": "retrieval", "previous-token": "previous",
                 "anti-diagonal": "anti_diagonal", "diagonal": "diagonal", "first-token sink": "sink",
                 "local": "local", "vertical": "vertical"}


def _line_share(peaks: Tensor, rows: Tensor, n_k: int, anti: bool) -> tuple[Tensor, Tensor]:
    """For peaks (L, H, R), each row's key of largest weight: the share of rows on the best line k = q − o (the
    diagonal of offset o) or, with `anti`, k = c − q (the anti-diagonal of sum c), and that line's o or c."""
    line = rows + peaks if anti else rows - peaks + n_k  # c, or o shifted to be >= 0
    counts = torch.zeros(*peaks.shape[:2], len(rows) + 2 * n_k).scatter_add_(-1, line, torch.ones(peaks.shape))
    share, best = counts.max(-1)
    return share / len(rows), (best if anti else best - n_k).float()


def pattern_scores(w: Tensor, q_tokens: Sequence[str], k_tokens: Sequence[str], *, same_axis: bool,
                   window: int = WINDOW, first: int = 0) -> dict[str, Tensor]:
    """Per pattern score (L, H) of the weights w (L, H, Q, K) over its last `window` rows; the induction and
    retrieval scores come from elsewhere. Self-attention only: previous-token and local (NaN for cross). `first`:
    the query position of w's first row (w the last rows of a longer map)."""
    w = w.detach().float()
    n_q, n_k = first + w.shape[-2], w.shape[-1]
    rows = torch.arange(max(first, n_q - window), n_q)
    part = w[..., rows - first, :]  # (L, H, R, K)
    sinks = list(sink_positions(k_tokens))
    out = {"sink": part[..., sinks].sum(-1).mean(-1)}
    plain = part.clone()
    plain[..., sinks] = 0
    out["vertical"] = plain.mean(-2).topk(min(VERTICAL, n_k), -1).values.sum(-1)
    nan = torch.full(w.shape[:2], float("nan"))
    if same_axis:
        gap = (torch.arange(n_k)[None, :] - rows[:, None]).abs()  # (R, K)
        out["local"] = (part * (gap <= LOCAL)).sum(-1).mean(-1)
        prev = rows[rows >= 1]
        out["previous"] = w[..., prev - first, prev - 1].mean(-1) if len(prev) else nan
    else:
        out["local"] = out["previous"] = nan
    peaks = part.argmax(-1)  # (L, H, R)
    out["diagonal"], out["diagonal_offset"] = _line_share(peaks, rows, n_k, anti=False)
    if not same_axis:
        out["anti_diagonal"], out["anti_diagonal_sum"] = _line_share(peaks, rows, n_k, anti=True)
    else:
        out["anti_diagonal"] = out["anti_diagonal_sum"] = nan
    return out


def window_induction(w: Tensor, start: int, n: int, window: int = WINDOW, first: int = 0) -> Tensor:
    """(L, H) induction score on the last `window` rows of a causal map (L, H, T, T) over r r (each copy n tokens,
    starting at `start`): the mean weight of query start + n + j on key start + j + 1 (j <= n − 2). `first`: the
    query position of w's first row (w the last rows of the map)."""
    end = start + 2 * n - 1
    rows = torch.arange(max(start + n, first, first + w.shape[-2] - window), end)
    if len(rows) == 0:
        return torch.full(w.shape[:2], float("nan"))
    return w[..., rows - first, rows - n + 1].float().mean(-1)


def label_of(scores: dict[str, float], strongest: Collection[str] = ()) -> str:
    """The first pattern (in PATTERNS order) whose score reaches its threshold, or that the head is its kind's
    standout for (`strongest`, see `standouts`); "mixed" when none."""
    for pattern, threshold in THRESHOLDS.items():
        value = scores.get(SCORE_COLUMNS[pattern])
        if pattern in strongest or (value is not None and value == value and value >= threshold):
            return pattern
    return "mixed"


def standouts(frame: pd.DataFrame) -> dict[int, set[str]]:
    """Row index -> the circuit patterns (induction, previous-token) for which that head is its kind's standout: the
    kind's strongest head by the score, at least `STANDOUT_FLOOR` and `STANDOUT_RATIO` times the kind's median (as
    `detect_heads`' best heads name a circuit in a model trained on small data, whose heads stay below 0.5)."""
    out: dict[int, set[str]] = {}
    for _, heads in frame.groupby("kind"):
        for pattern in STANDOUT:
            values = heads[SCORE_COLUMNS[pattern]].dropna()
            if values.empty:
                continue
            best = values.idxmax()
            if values[best] >= STANDOUT_FLOOR and values[best] >= STANDOUT_RATIO * values.median():
                out.setdefault(best, set()).add(pattern)
    return out


def label_frame(frame: pd.DataFrame) -> pd.Series:
    """The pattern label of every head of the frame (its scores, one row per head, any kinds)."""
    marked = standouts(frame)
    return pd.Series([label_of(row, marked.get(i, ())) for i, row in zip(frame.index, frame.to_dict("records"),
                                                                           strict=True)], index=frame.index)


def pattern_frame(kind: str, scores: dict[str, Tensor]) -> pd.DataFrame:
    """One row per head of the kind: kind, layer, head, label (Head.label), every score, and its `pattern`."""
    n_layers, n_heads = scores["sink"].shape
    rows = []
    for layer in range(n_layers):
        for head in range(n_heads):
            row = {"kind": kind, "layer": layer, "head": head, "label": Head(kind, layer, head).label}
            for name in ("induction", "retrieval", "previous", "anti_diagonal", "anti_diagonal_sum", "diagonal",
                         "diagonal_offset", "sink", "local", "vertical"):
                row[name] = float(scores[name][layer, head]) if name in scores else float("nan")
            rows.append(row)
    frame = pd.DataFrame(rows)
    frame["pattern"] = label_frame(frame)
    return frame
