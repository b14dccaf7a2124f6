"""The one-pass estimate of every patch site (attribution patching; Nanda 2023, Syed et al. 2023), the machinery of
`heads --estimate` applied to copies instead of ablations: to first order, writing the clean activation a_clean
into the corrupted run moves the metric by (a_clean − a_corrupted) · d metric / d a, the gradient taken once on
the corrupted run. One forward and one backward give every site; `preview_patching` re-measures the sites with the
largest estimates exactly and says how well the estimate ranks them (Spearman).
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch
from torch import Tensor

from ..adapters import InspectableModel
from ..adapters.patching import RESIDUAL, Patch, patch_points, recording_activations
from .agreement import spearman
from .head_sweep import Progress
from .patching import PatchingSetup, metric_of, patched_metrics
from .patching_sites import SITES, site_frame, sites_of

ESTIMATE_COLUMNS = ["site", "where", "layer", "head", "position", "token", "estimate", "estimated_recovery"]


def _gradients(adapter: InspectableModel, setup: PatchingSetup) -> dict[tuple[str, str, int], Tensor]:
    """d metric / d activation on the corrupted run, per (point, where, index): (T, width)."""
    with adapter.differentiable(), recording_activations(patch_points(adapter), detach=False) as acts:
        logits = adapter.teacher_logits(adapter.network, setup.src[1], setup.tgt[1])
        metric = metric_of(adapter, logits[:, -1], setup.token, setup.contrast)[0]
        keys = [(RESIDUAL, s, i) for s, ts in acts.residual.items() for i in range(len(ts))]
        keys += [("head", k, i) for k, ts in acts.heads.items() for i in range(len(ts))]
        tensors = [(acts.residual if p == RESIDUAL else acts.heads)[w][i] for p, w, i in keys]
        grads = torch.autograd.grad(metric, tensors, allow_unused=True)
    return {key: (torch.zeros_like(t[0]) if g is None else g[0]).detach().float()
            for key, t, g in zip(keys, tensors, grads, strict=True)}


def _estimate(setup: PatchingSetup, patch: Patch, grads: dict, n_heads: dict[str, int]) -> float:
    corrupted = (setup.corrupted.residual if patch.point == RESIDUAL else setup.corrupted.heads)[patch.where]
    grad = grads[(patch.point, patch.where, patch.index)]
    now = corrupted[patch.index][0].float()
    cols = slice(None)
    if patch.head is not None:
        width = now.shape[-1] // n_heads[patch.where]
        cols = slice(patch.head * width, (patch.head + 1) * width)
    rows = list(patch.positions)
    return float(((patch.value.float() - now[rows, cols]) * grad[rows, cols]).sum())


def estimate_patching(adapter: InspectableModel, setup: PatchingSetup, which: Sequence[str] = SITES,
                      progress: Progress | None = None) -> pd.DataFrame:
    """Every site's estimated difference (`estimate`) and recovery, from one forward and one backward; largest
    |estimate| first."""
    if progress is not None:
        progress(0.0)
    grads = _gradients(adapter, setup)
    n_heads = {k: h for k, (_, h) in adapter.head_counts().items()}
    rows = []
    for s in sites_of(adapter, setup, which):
        estimate = sum(_estimate(setup, p, grads, n_heads) for p in s.patches)
        rows.append({"site": s.site, "where": s.where, "layer": s.layer, "head": s.head, "position": s.position,
                     "token": s.token, "estimate": estimate,
                     "estimated_recovery": float("nan") if setup.barely else estimate / setup.gap})
    if progress is not None:
        progress(1.0)
    frame = pd.DataFrame(rows, columns=ESTIMATE_COLUMNS)
    return frame.reindex(frame["estimate"].abs().sort_values(ascending=False, kind="stable").index
                         ).reset_index(drop=True)


def preview_patching(adapter: InspectableModel, setup: PatchingSetup, which: Sequence[str] = SITES, *, top_k: int = 10,
                     progress: Progress | None = None) -> pd.DataFrame:
    """The estimate for every site, with the exact `difference` and `recovery` measured for the `top_k` sites of
    largest |estimate| (NaN for the others)."""
    estimate = estimate_patching(adapter, setup, which)
    if progress is not None:
        progress(0.2)
    keys = ["site", "where", "layer", "head", "position"]
    top = estimate.head(top_k)
    wanted = {tuple(r) for r in top[keys].itertuples(index=False)}
    sites = [s for s in sites_of(adapter, setup, which) if (s.site, s.where, s.layer, s.head, s.position) in wanted]
    scaled = None if progress is None else (lambda f: progress(0.2 + 0.8 * f))
    exact = site_frame(setup, sites, patched_metrics(adapter, setup, [s.patches for s in sites], progress=scaled))
    return estimate.merge(exact[[*keys, "difference", "recovery"]], on=keys, how="left")


def estimate_agreement(estimate: pd.DataFrame, exact: pd.DataFrame) -> float:
    """Spearman rank correlation of estimated and exact differences over the sites both have (NaN under 2)."""
    keys = ["site", "where", "layer", "head", "position"]
    both = estimate[[*keys, "estimate"]].merge(exact[[*keys, "difference"]], on=keys).dropna()
    if len(both) < 2:
        return float("nan")
    return float(spearman(torch.tensor(both["estimate"].to_numpy()), torch.tensor(both["difference"].to_numpy())))
