"""One model on an input A and its edit B: both decodes, their outputs aligned by edit distance, and every attention
map's difference B − A on *aligned* rows and columns.

Token axes are aligned by edit distance (`token_alignment`): a kept or swapped token is one row (column) holding A's
and B's weights; an inserted token is a row of B's alone, a deleted one a row of A's alone, so one inserted word
does not shift every column after it. Heads are ranked by how much their attention moved: the mean |B − A| over the
cells whose row and column are both aligned. Per aligned output step: each side's chosen token and probability, how
the edit moved the probability of A's token (p_B − p_A) and the KL divergence KL(A || B) between the two next-token
distributions (over what the model can emit, its generation rules applied as in decoding).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...adapters import InspectableModel
from ...decode import (
    AttentionTrace,
    DecodeResult,
    InputError,
    greedy_decode_many,
    read_source,
)
from ...model import SOURCE, TARGET
from .token_alignment import TokenAlignment, align_tokens

SAME, CHANGED, INSERTED, DELETED = "same", "changed", "inserted", "deleted"
STEP_COLUMNS = ["step_a", "step_b", "token_a", "token_b", "prob_a", "prob_b", "delta_prob", "kl", "status"]
RANK_COLUMNS = ["kind", "layer", "head", "mean_abs", "max_abs"]


def _status(alignment: TokenAlignment, a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    return tuple(INSERTED if i is None else DELETED if j is None else SAME if a[i] == b[j] else CHANGED
                 for i, j in alignment.pairs)


def _label(pair: tuple[int | None, int | None], a: Sequence[str], b: Sequence[str]) -> str:
    i, j = pair
    if i is None:
        assert j is not None  # a pair has a side in A or in B
        return f"+{b[j]}"
    if j is None:
        return f"−{a[i]}"
    return a[i] if a[i] == b[j] else f"{a[i]}→{b[j]}"


@dataclass(frozen=True)
class AlignedDifference:
    """One kind's weights of A and B on the aligned axes: (layers, heads, rows, columns), NaN where a side lacks the
    row or column (an inserted or deleted token)."""

    kind: str
    query_tokens: tuple[str, ...]  # one label per aligned row: "dog", "dog→cat", "+big", "−big"
    key_tokens: tuple[str, ...]
    query_status: tuple[str, ...]  # SAME, CHANGED, INSERTED, DELETED per row
    key_status: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray

    def difference(self, layer: int, head: int | None = None) -> np.ndarray:
        """(rows, columns) B − A of one head (None: the mean of heads); a missing side counts as 0."""
        a, b = (np.nan_to_num(x[layer]) for x in (self.a, self.b))
        return (b - a).mean(0) if head is None else b[head] - a[head]

    def aligned_cells(self) -> np.ndarray:
        """(rows, columns) True where both the row and the column exist on both sides."""
        rows = np.array([s in (SAME, CHANGED) for s in self.query_status])
        cols = np.array([s in (SAME, CHANGED) for s in self.key_status])
        return rows[:, None] & cols[None, :]

    def head_movement(self) -> np.ndarray:
        """(layers, heads) mean |B − A| over the aligned cells."""
        return self.movement()[0]

    def movement(self) -> tuple[np.ndarray, np.ndarray]:
        """(layers, heads) mean and largest |B − A| over the aligned cells (0 where there are none), a layer at a
        time: no temporary is larger than one layer's maps (at bart-large's shape and 1,024 tokens a kind's maps
        are 0.8 GB a side)."""
        rows = np.flatnonzero([s in (SAME, CHANGED) for s in self.query_status])
        cols = np.flatnonzero([s in (SAME, CHANGED) for s in self.key_status])
        mean, peak = np.zeros(self.a.shape[:2]), np.zeros(self.a.shape[:2])
        if not rows.size or not cols.size:
            return mean, peak
        every = rows.size == len(self.query_status) and cols.size == len(self.key_status)
        for layer in range(self.a.shape[0]):
            moved = self.b[layer] - self.a[layer]  # (H, rows, columns)
            if not every:
                moved = np.take(np.take(moved, rows, axis=1), cols, axis=2)
            np.abs(moved, out=moved)
            mean[layer], peak[layer] = moved.mean(axis=(1, 2)), moved.max(axis=(1, 2))
        return mean, peak


MAX_BLOCKS = 64  # runs of rows x runs of columns copied block by block; more (a scattered edit): gathered


def _runs(index: np.ndarray) -> list[tuple[int, int, int]]:
    """(first aligned position, first own position, length) of each run of consecutive own positions in `index`
    (-1: none)."""
    present = np.flatnonzero(index >= 0)
    if not present.size:
        return []
    breaks = np.flatnonzero((np.diff(present) != 1) | (np.diff(index[present]) != 1)) + 1
    return [(int(present[a]), int(index[present[a]]), int(b - a))
            for a, b in zip(np.r_[0, breaks], np.r_[breaks, present.size], strict=True)]


def _on_axes(w: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """w (L, H, Q, K) on the aligned rows and columns (-1: a row or column this side lacks, NaN); read-only, and
    w itself (no copy) where every row and column is its own. An edit leaves long runs of positions in order: those
    blocks are copied whole, one pass over the maps (a kind's maps are 0.8 GB a side at bart-large's shape and 1,024
    tokens)."""
    if np.array_equal(rows, np.arange(w.shape[2])) and np.array_equal(cols, np.arange(w.shape[3])):
        grid = w.view()
    else:
        row_runs, col_runs = _runs(rows), _runs(cols)
        if len(row_runs) * len(col_runs) <= MAX_BLOCKS:
            grid = np.empty((*w.shape[:2], len(rows), len(cols)), dtype=w.dtype)
            for r, r_own, n_r in row_runs:
                for c, c_own, n_c in col_runs:
                    grid[:, :, r:r + n_r, c:c + n_c] = w[:, :, r_own:r_own + n_r, c_own:c_own + n_c]
        else:
            grid = np.take(np.take(w, np.clip(rows, 0, None), axis=2), np.clip(cols, 0, None), axis=3)
        grid[:, :, rows < 0] = np.nan
        grid[:, :, :, cols < 0] = np.nan
    grid.flags.writeable = False  # it may be the decode's own (cached) trace
    return grid


def aligned_difference(trace_a: AttentionTrace, trace_b: AttentionTrace, kind: str,
                       axes: dict[str, TokenAlignment]) -> AlignedDifference:
    """B and A's weights of `kind` on the rows and columns that `axes` (SOURCE/TARGET axis -> alignment) align."""
    spec = trace_a.family
    (qa, ka), (qb, kb) = trace_a.labels(kind), trace_b.labels(kind)
    q_axis, k_axis = spec.axes[kind]
    rows, cols = axes[q_axis], axes[k_axis]
    out = []
    for trace, side in ((trace_a, 0), (trace_b, 1)):
        w = trace.weights(kind).detach().float().cpu().numpy()  # (L, H, Q, K)
        out.append(_on_axes(w, np.array([-1 if p[side] is None else p[side] for p in rows.pairs], dtype=np.int64),
                            np.array([-1 if p[side] is None else p[side] for p in cols.pairs], dtype=np.int64)))
    return AlignedDifference(kind, tuple(_label(p, qa, qb) for p in rows.pairs),
                             tuple(_label(p, ka, kb) for p in cols.pairs), _status(rows, qa, qb),
                             _status(cols, ka, kb), out[0], out[1])


@dataclass(frozen=True)
class EditComparison:
    """Both decodes, the aligned steps (STEP_COLUMNS), the aligned difference per kind and the heads ranked by how
    much their attention moved (RANK_COLUMNS, largest first)."""

    a: DecodeResult
    b: DecodeResult
    output_alignment: TokenAlignment
    first_divergence: int | None  # the first row of `steps` whose tokens differ; None when the outputs agree
    steps: pd.DataFrame
    differences: dict[str, AlignedDifference]
    ranking: pd.DataFrame


def _distributions(adapter: InspectableModel, result: DecodeResult, max_steps: int | None) -> torch.Tensor:
    """(steps, V) next-token probabilities at each step of a decode, teacher-forced on its own output, under the
    generation rules `greedy_decode` applied (the same length limit)."""
    source = read_source(adapter, result.source_text)
    prefix, output = adapter.decoder_prefix(source), [s.token_id for s in result.steps]
    limit = adapter.max_target_len - len(prefix) + 1
    n_max = min(limit, max_steps if max_steps is not None else adapter.default_max_steps(len(source.ids)))
    max_length = max(n_max, min(limit, 1)) + len(prefix)
    tgt = torch.tensor([[*prefix, *output[:-1]]])
    with adapter.running():
        logits = adapter.teacher_logits(adapter.network, torch.tensor([source.ids]), tgt)[0, len(prefix) - 1:].float()
    rows = [adapter.constrain([*prefix, *output[:t]], logits[t], max_length) for t in range(len(output))]
    return torch.stack(rows).softmax(-1)


def _step_frame(adapter: InspectableModel, a: DecodeResult, b: DecodeResult, alignment: TokenAlignment,
                max_steps: int | None) -> pd.DataFrame:
    pa, pb = _distributions(adapter, a, max_steps), _distributions(adapter, b, max_steps)
    both = [(i, j) for i, j in alignment.pairs if i is not None and j is not None]
    moved: dict[tuple[int | None, int | None], tuple[float, float]] = {}
    if both:  # every aligned pair at once: a distribution is a row of V probabilities
        ia, ja = torch.tensor([i for i, _ in both]), torch.tensor([j for _, j in both])
        token_a = torch.tensor([a.steps[i].token_id for i, _ in both])
        p, q = pa[ia], pb[ja]  # (n, V)
        kl = torch.where(p > 0, p * (p.clamp_min(1e-30).log() - q.clamp_min(1e-30).log()), 0.0).sum(-1)
        delta = q.gather(1, token_a[:, None])[:, 0] - p.gather(1, token_a[:, None])[:, 0]
        moved = {pair: (float(d), max(0.0, float(k)))
                 for pair, d, k in zip(both, delta.tolist(), kl.tolist(), strict=True)}
    rows = []
    for i, j in alignment.pairs:
        sa, sb = (a.steps[i] if i is not None else None), (b.steps[j] if j is not None else None)
        delta_prob, kl_step = moved.get((i, j), (np.nan, np.nan))
        rows.append({"step_a": None if i is None else i + 1, "step_b": None if j is None else j + 1,
                     "token_a": sa.token if sa else "", "token_b": sb.token if sb else "",
                     "prob_a": float(pa[i, sa.token_id]) if sa else np.nan,
                     "prob_b": float(pb[j, sb.token_id]) if sb else np.nan, "delta_prob": delta_prob, "kl": kl_step,
                     "status": (INSERTED if sa is None else DELETED if sb is None else
                                SAME if sa.token_id == sb.token_id else CHANGED)})
    return pd.DataFrame(rows, columns=STEP_COLUMNS).astype({"step_a": "Int64", "step_b": "Int64"})


def check_edit(text_a: str, text_b: str) -> None:
    """InputError for an empty edit or one identical to the input (before anything is decoded)."""
    if not isinstance(text_b, str) or not text_b.strip():
        raise InputError("The edited input is empty: change a word of the input rather than deleting it all.")
    if text_a.strip() == text_b.strip():
        raise InputError("The edited input is the same as the input: change at least one word.")


def compare_edit(adapter: InspectableModel, text_a: str, text_b: str, *, max_steps: int | None = None,
                 decoded: tuple[DecodeResult, DecodeResult] | None = None) -> EditComparison:
    """Decode `text_a` and its edit `text_b` with one model and diff everything (`decoded`: their greedy decodes
    already made, e.g. cached by the app); InputError for an empty or identical edit or one the model cannot read."""
    check_edit(text_a, text_b)
    if decoded is None:  # both decodes stepped as one batch where the model can (`greedy_decode_many`)
        first, second = greedy_decode_many(adapter, [text_a, text_b], max_steps=max_steps)
        if isinstance(first, InputError):
            raise first
        if isinstance(second, InputError):
            raise second
        decoded = (first, second)
    a, b = decoded
    alignment = align_tokens([s.token_id for s in a.steps], [s.token_id for s in b.steps])
    steps = _step_frame(adapter, a, b, alignment, max_steps)
    changed = steps.index[steps["status"] != SAME]
    axes = {SOURCE: align_tokens(a.trace.source_tokens, b.trace.source_tokens),
            TARGET: align_tokens(a.trace.decoder_input_tokens, b.trace.decoder_input_tokens)}
    differences = {kind: aligned_difference(a.trace, b.trace, kind, axes) for kind in a.trace.kinds}
    rows = []
    for kind, diff in differences.items():
        moved, peak = diff.movement()
        rows += [{"kind": kind, "layer": layer, "head": head, "mean_abs": float(moved[layer, head]),
                  "max_abs": float(peak[layer, head])}
                 for layer in range(moved.shape[0]) for head in range(moved.shape[1])]
    ranking = pd.DataFrame(rows, columns=RANK_COLUMNS).sort_values("mean_abs", ascending=False, kind="stable")
    return EditComparison(a, b, alignment, int(changed[0]) if len(changed) else None, steps, differences,
                          ranking.reset_index(drop=True))
