"""The one-pass estimate of every patch site (attribution patching; Nanda 2023, Syed et al. 2023), the machinery of
`heads --estimate` applied to copies instead of ablations: to first order, writing the clean activation a_clean
into the corrupted run moves the metric by (a_clean − a_corrupted) · d metric / d a, the gradient taken once on
the corrupted run. One forward and one backward give every site; `preview_patching` re-measures the sites with the
largest estimates exactly and says how well the estimate ranks them (Spearman).

At one decode step of a decoder-only model (`step_patching_estimate`, at any length) the sites are the step's
position: nothing earlier depends on the last position, so its gradient is the step's alone, the earlier positions'
keys and values held fixed. Each run's prefix goes in without gradients, through the attention store's fused
forward (`keep="store"`, and "auto" past `STORE_ABOVE`: the kernel works in blocks, no n x n map) or through the plain
forward (`keep="maps"`: one block), then the step's one token with gradients against that cache; the numbers are
`estimate_patching`'s for the same sites either way.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import Tensor

from ...adapters import InspectableModel, store_chunks
from ...adapters.patching import RESIDUAL, Activations, Patch, patch_points, recording_activations
from ...decode import InputError, keeps_store
from ..attribution.agreement import spearman
from .head_sweep import Progress
from .patching_sites import HEADS, RESIDUAL_STREAM, SITES, site_frame, sites_of
from .runs import BARELY, PatchingSetup, metric_of, patched_metrics

ESTIMATE_COLUMNS = ["site", "where", "layer", "head", "position", "token", "estimate", "estimated_recovery"]
STEP_COLUMNS = ["site", "layer", "head", "estimate", "estimated_recovery"]


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


@dataclass(frozen=True)
class StepPatching:
    """The estimate of every head (and residual) site at one step's position, and the two runs' metrics."""

    token: int
    contrast: int | None
    clean_metric: float
    corrupted_metric: float
    frame: pd.DataFrame  # STEP_COLUMNS, largest |estimate| first; layer of a residual site: i (0: the embeddings)

    @property
    def gap(self) -> float:
        return self.clean_metric - self.corrupted_metric

    def head_grid(self) -> Tensor:
        """(layers, heads) of the head sites' estimates."""
        heads = self.frame[self.frame["site"] == HEADS]
        grid = torch.zeros(int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1)
        grid[torch.tensor(heads["layer"].tolist()), torch.tensor(heads["head"].tolist())] = torch.tensor(
            heads["estimate"].tolist(), dtype=torch.float32)
        return grid


def _run(adapter: InspectableModel, ids: Sequence[int], n_source: int | None, grad: bool, stored: bool
         ) -> tuple[Tensor, Activations]:
    """The step's logits (1, V) after `ids` (the prefix without gradients: through the fused store path when
    `stored`, no n x n map, else through the plain forward; the last id with gradients if `grad`) and the patchable
    activations of that last position."""
    if len(ids) < 2:
        raise InputError("The step needs at least one token before it.")
    ids_t = torch.tensor([list(ids)])
    first = len(ids) - 1 if n_source is None else n_source  # all but the start by default, as a stored decode
    with adapter.differentiable() if grad else adapter.running():
        encoded = adapter.encode(ids_t[:, : n_source or 0])
        cache = adapter.start_cache(encoded)
        prefix = ids_t[:, :-1]
        if stored:  # the prefix's store is dropped: only its cache is read
            adapter.store_feed(prefix, cache, store_chunks(adapter), first)
        else:
            with torch.no_grad():
                _feed_logits(adapter, prefix, cache, first)
        with recording_activations(patch_points(adapter), detach=not grad) as acts:
            logits = _feed_logits(adapter, ids_t[:, -1:], cache)
    return logits, acts


def _feed_logits(adapter: InspectableModel, ids: Tensor, cache: object, n_source: int = 0) -> Tensor:
    """(1, V) logits after `ids` (1, t) fed after `cache` (the first `n_source` source ids, ours), through the
    model's own modules (gradients flow; the decode's fast output head keeps an inference-mode copy of the weights,
    so it is not used here)."""
    network: Any = adapter.network
    if hasattr(network, "get_output_embeddings"):  # a Hugging Face causal LM
        return network(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
    return network.feed(ids, cache, n_source, need_weights=False).logits


def step_patching_estimate(adapter: InspectableModel, clean_ids: Sequence[int], corrupted_ids: Sequence[int],
                           token: int, contrast: int | None = None, *,
                           n_source: int | tuple[int | None, int | None] | None = None, keep: str = "auto",
                           progress: Progress | None = None) -> StepPatching:
    """Every head's and residual's estimate at the step whose query is the last of `clean_ids` / `corrupted_ids`
    (each a decoder-only model's whole fed sequence up to that step), for the metric log p(token) [- log
    p(contrast)]. `n_source`: source ids at the start (our decoder-only models), as the stored decode's prefill; one
    for both runs or (clean, corrupted). `keep`: how the prefixes go in, as a decode keeps its attention ("store":
    the store's fused forward; "maps": the plain forward; "auto": the store past `STORE_ABOVE`); the numbers are the
    same."""
    sources = n_source if isinstance(n_source, tuple) else (n_source, n_source)
    if not adapter.family.prompt_in_decoder:
        raise InputError(f"{adapter.name} is not a decoder-only model: the step estimate reads one sequence.")
    stored = keeps_store(adapter, max(len(clean_ids), len(corrupted_ids)) - 1, keep)
    if list(clean_ids) == list(corrupted_ids):
        raise InputError("The edited document reads the same as the clean one: change at least one word.")
    if progress is not None:
        progress(0.0)
    clean_logits, clean = _run(adapter, clean_ids, sources[0], grad=False, stored=stored)
    if progress is not None:
        progress(0.45)
    corrupted_logits, corrupted = _run(adapter, corrupted_ids, sources[1], grad=True, stored=stored)
    with adapter.differentiable():
        metric = metric_of(adapter, corrupted_logits, token, contrast)[0]
        kind = adapter.family.kinds[0]
        heads, resid = corrupted.heads[kind], corrupted.residual["decoder"]
        grads = torch.autograd.grad(metric, [*heads, *resid], allow_unused=True)
    clean_metric = float(metric_of(adapter, clean_logits.detach(), token, contrast)[0])
    corrupted_metric = float(metric.detach())
    gap = clean_metric - corrupted_metric
    n_heads = adapter.head_counts()[kind][1]
    rows: list[dict[str, Any]] = []
    for layer, (now, g) in enumerate(zip(heads, grads[: len(heads)], strict=True)):
        delta = (clean.heads[kind][layer][0, -1].float() - now[0, -1].detach().float())
        g = torch.zeros_like(delta) if g is None else g[0, -1].float()
        per = (delta * g).view(n_heads, -1).sum(-1)
        rows += [{"site": HEADS, "layer": layer, "head": h, "estimate": float(per[h])} for h in range(n_heads)]
    for i, (now, g) in enumerate(zip(resid, grads[len(heads):], strict=True)):
        delta = clean.residual["decoder"][i][0, -1].float() - now[0, -1].detach().float()
        value = 0.0 if g is None else float((delta * g[0, -1].float()).sum())
        rows.append({"site": RESIDUAL_STREAM, "layer": i, "head": -1, "estimate": value})
    for row in rows:
        row["estimated_recovery"] = float("nan") if abs(gap) < BARELY else float(row["estimate"]) / gap
    frame = pd.DataFrame(rows, columns=STEP_COLUMNS)
    frame = frame.reindex(frame["estimate"].abs().sort_values(ascending=False, kind="stable").index)
    if progress is not None:
        progress(1.0)
    return StepPatching(token, contrast, clean_metric, corrupted_metric, frame.reset_index(drop=True))
