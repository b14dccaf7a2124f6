"""Which heads matter for one output: the exact ablation sweep (batched) and the one-pass estimate, re-checked.

Effects are drops in log p(output | text), teacher-forced on `output` (ids): how much worse the model explains its
own answer with the head switched off. Progress callbacks get the fraction done and may raise `Cancelled`.
"""
from __future__ import annotations

import time
from typing import Sequence

import pandas as pd
import torch
from torch import Tensor

from ...adapters import InspectableModel
from ..attribution.agreement import spearman
from ..attribution.attribution import IG_STEPS, Attribution, attribute_steps
from .ablation import Head, Sweep, all_heads, check_output, head_mask, output_log_prob, teacher_inputs
from .head_sweep import DEFAULT_BATCH, Progress, head_gradients, sweep_log_probs

SWEEP_COLUMNS = ["kind", "layer", "head", "label", "log_prob", "drop"]
ATTRIBUTION_ROWS = 32  # interpolated inputs per pass of attribution: bounds memory (activations are rows x T x D)


def _one_at_a_time(adapter: InspectableModel, src: Tensor, tgt_in: Tensor, targets: Tensor, heads: list[Head],
                   report: Progress, time_cap: float | None) -> tuple[float, dict[int, float]]:
    """(log p(output), head index -> log p with that head off), one teacher-forced forward per head."""
    start = time.perf_counter()
    base = output_log_prob(adapter, src, tgt_in, targets)
    done: dict[int, float] = {}
    for i, h in enumerate(heads):
        if time_cap is not None and time.perf_counter() - start > time_cap:
            break
        done[i] = output_log_prob(adapter, src, tgt_in, targets, head_mask(adapter, [h]))
        report((i + 1) / len(heads))
    return base, done


def sweep_heads(adapter: InspectableModel, text: str, output: Sequence[int], *, kinds: Sequence[str] | None = None,
                heads: Sequence[Head] | None = None, time_cap: float | None = None,
                on_fraction: Progress | None = None, batch: int = DEFAULT_BATCH, dtype: torch.dtype | None = None
                ) -> Sweep:
    """Ablate each head (of `kinds`, or the given `heads`) in turn, `batch` at a time; per head the drop in
    log p(output | text). `on_fraction(fraction)` after each batch (it may raise `Cancelled`); `time_cap` seconds
    stops it early (`complete` False); `dtype=torch.bfloat16` for speed."""
    src, tgt_in = teacher_inputs(adapter, text, output)
    check_output(adapter, output)
    targets = torch.tensor(list(output))
    heads = list(all_heads(adapter, kinds) if heads is None else heads)
    start = time.perf_counter()

    def report(fraction: float) -> None:
        if on_fraction is not None:
            on_fraction(fraction)

    if adapter.family.encoder_kind is None:  # the batched sweep reuses an encoder; decoder-only: head by head
        base, done = _one_at_a_time(adapter, src, tgt_in, targets, heads, report, time_cap)
    else:
        base, done = sweep_log_probs(adapter, src, tgt_in, targets, [(h.kind, h.layer, h.head) for h in heads],
                                     batch=batch, dtype=dtype, progress=report, time_cap=time_cap)
    rows = [{"kind": h.kind, "layer": h.layer, "head": h.head, "label": h.label, "log_prob": done[i],
             "drop": base - done[i]} for i, h in enumerate(heads) if i in done]
    frame = pd.DataFrame(rows, columns=SWEEP_COLUMNS)
    frame = frame.sort_values("drop", ascending=False, kind="stable").reset_index(drop=True)
    return Sweep(frame, base, len(rows) == len(heads), time.perf_counter() - start)


def estimate_head_effects(adapter: InspectableModel, text: str, output: Sequence[int], *,
                          kinds: Sequence[str] | None = None, progress: Progress | None = None) -> pd.DataFrame:
    """First-order estimate of every head's drop (attribution patching: one forward, one backward).

    Columns kind, layer, head, label, estimate; largest estimate first."""
    src, tgt_in = teacher_inputs(adapter, text, output)
    check_output(adapter, output, "attribute")
    if progress is not None:
        progress(0.0)
    _, grads = head_gradients(adapter, src, tgt_in, torch.tensor(list(output)), kinds)
    rows = [{"kind": kind, "layer": layer, "head": head, "label": Head(kind, layer, head).label,
             "estimate": float(g[layer, head])}
            for kind, g in grads.items() for layer in range(g.shape[0]) for head in range(g.shape[1])]
    if progress is not None:
        progress(1.0)
    frame = pd.DataFrame(rows, columns=["kind", "layer", "head", "label", "estimate"])
    return frame.sort_values("estimate", ascending=False, kind="stable").reset_index(drop=True)


def checked_estimate(adapter: InspectableModel, text: str, output: Sequence[int], *, top_k: int = 10,
                     kinds: Sequence[str] | None = None, progress: Progress | None = None,
                     dtype: torch.dtype | None = None) -> pd.DataFrame:
    """The estimate for every head, with the exact drop re-measured for the `top_k` heads of largest |estimate|
    (column "drop", NaN for the others); sorted by the exact drop where known, then by the estimate."""
    estimate = estimate_head_effects(adapter, text, output, kinds=kinds)
    if progress is not None:
        progress(0.1)
    top = estimate.reindex(estimate["estimate"].abs().sort_values(ascending=False).index).head(top_k)
    heads = [Head(r.kind, int(r.layer), int(r.head)) for r in top.itertuples()]
    scaled = None if progress is None else (lambda f: progress(0.1 + 0.9 * f))
    exact = sweep_heads(adapter, text, output, heads=heads, on_fraction=scaled, dtype=dtype).frame
    frame = estimate.merge(exact[["kind", "layer", "head", "drop"]], on=["kind", "layer", "head"], how="left")
    return frame.sort_values(["drop", "estimate"], ascending=False, na_position="last",
                             kind="stable").reset_index(drop=True)


def estimate_agreement(estimate: pd.DataFrame, sweep: pd.DataFrame) -> float:
    """Spearman rank correlation of estimated and exact drops over the heads both have."""
    both = estimate.merge(sweep[["kind", "layer", "head", "drop"]], on=["kind", "layer", "head"])
    if len(both) < 2:
        return float("nan")
    return float(spearman(torch.tensor(both["estimate"].to_numpy()), torch.tensor(both["drop"].to_numpy())))


def attribute_in_chunks(adapter: InspectableModel, text: str, output: Sequence[int], *, n_steps: int = IG_STEPS,
                        method: str = "integrated_gradients", max_rows: int = ATTRIBUTION_ROWS,
                        progress: Progress | None = None) -> list[Attribution]:
    """`attribute_steps` for every output step, a few steps at a time so at most `max_rows` interpolated inputs
    are in memory at once; `progress` (may raise `Cancelled`) after each chunk."""
    points = n_steps if method == "integrated_gradients" else 1
    per_chunk = max(1, max_rows // points)
    out: list[Attribution] = []
    for first in range(0, len(output), per_chunk):
        steps = list(range(first, min(len(output), first + per_chunk)))
        out += attribute_steps(adapter, text, output, steps, method, n_steps, max_batch=max_rows)
        if progress is not None:
            progress(len(out) / len(output))
    return out
