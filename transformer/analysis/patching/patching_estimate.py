"""The one-pass estimate of every patch site (attribution patching; Nanda 2023, Syed et al. 2023), the machinery of
`heads --estimate` applied to copies instead of ablations: to first order, writing the clean activation a_clean
into the corrupted run moves the metric by (a_clean − a_corrupted) · d metric / d a, the gradient taken once on
the corrupted run. One forward and one backward give every site; `preview_patching` re-measures the sites with the
largest estimates exactly and says how well the estimate ranks them (Spearman).

`estimate_patching` is the one estimate at every length. It reads a `PatchingSetup` (`prepare_patching`: both runs
recorded whole) or `StepRuns` (a decoder-only model's two fed sequences up to one decode step, any length). The
corrupted run's gradient is taken over a window: the whole run as one block when short, or past `STORE_ABOVE`
(`keep="store"`, "auto" above it) only the target step's position, the prefix going in first without gradients
through the attention store's fused kernel, in blocks, no n x n map. Nothing earlier depends on a causal model's
last position, so the window's gradient is the whole run's there: the numbers are the same either way (1e-6), the
sites those the window holds.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch
from torch import Tensor

from ...adapters import InspectableModel, store_chunks
from ...adapters.patching import HEAD, RESIDUAL, Activations, Patch, patch_points, recording_activations
from ...decode import InputError, keeps_store
from ..attribution.agreement import spearman
from .head_sweep import Progress
from .patching_sites import HEADS, RESIDUAL_STREAM, SITES, Site, site_frame, sites_of
from .runs import BARELY, PatchingSetup, metric_of, patched_metrics

ESTIMATE_COLUMNS = ["site", "where", "layer", "head", "position", "token", "estimate", "estimated_recovery"]


@dataclass(frozen=True)
class StepRuns:
    """One decode step of a decoder-only model at any length: each run's whole fed sequence up to the step (its last
    id the step's query), the token the metric reads (log p(token) [- log p(contrast)]) and, for our decoder-only
    models, how many source ids start each sequence (None: all but the last, as a stored decode's prefill)."""

    clean_ids: tuple[int, ...]
    corrupted_ids: tuple[int, ...]
    token: int
    contrast: int | None = None
    n_source: tuple[int | None, int | None] = (None, None)

    def run(self, which: int) -> tuple[Tensor, Tensor]:
        """(source ids (1, S), the fed sequence (1, T)) of the clean (0) or the corrupted (1) run."""
        ids = (self.clean_ids, self.corrupted_ids)[which]
        if len(ids) < 2:
            raise InputError("The step needs at least one token before it.")
        n = self.n_source[which]
        tgt = torch.tensor([list(ids)])
        return tgt[:, : len(ids) - 1 if n is None else n], tgt


@dataclass(frozen=True)
class PatchingEstimate:
    """Every site's estimate (`frame`: ESTIMATE_COLUMNS, largest |estimate| first) and the two runs' metrics."""

    token: int
    contrast: int | None
    clean_metric: float
    corrupted_metric: float
    frame: pd.DataFrame

    @property
    def gap(self) -> float:
        return self.clean_metric - self.corrupted_metric

    def head_grid(self) -> Tensor:
        """(layers, heads) of the head sites' estimates (one attention kind: a decoder-only model's)."""
        heads = self.frame[self.frame["site"] == HEADS]
        grid = torch.zeros(int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1)
        grid[torch.tensor(heads["layer"].tolist()), torch.tensor(heads["head"].tolist())] = torch.tensor(
            heads["estimate"].tolist(), dtype=torch.float32)
        return grid


def _window(adapter: InspectableModel, src: Tensor, tgt: Tensor, start: int, grad: bool) -> tuple[Tensor, Activations]:
    """The logits (1, V) after `tgt` (1, T) and the patchable activations of positions `start`.. (with gradients if
    `grad`). `start` 0: the whole run teacher-forced as one block; past 0 the prefix goes in first without gradients,
    through the store's fused kernel (blocks, no n x n map; its store dropped, only the cache read), then the window
    against that cache (`feed_logits`, differentiable)."""
    points = patch_points(adapter)
    with adapter.differentiable() if grad else adapter.running():
        if start == 0:
            with recording_activations(points, detach=not grad) as acts:
                return adapter.teacher_logits(adapter.network, src, tgt)[:, -1], acts
        cache = adapter.start_cache(adapter.encode(src))
        adapter.store_feed(tgt[:, :start], cache, store_chunks(adapter), min(src.shape[1], start))
        with recording_activations(points, detach=not grad) as acts:
            logits = adapter.feed_logits(tgt[:, start:], cache)
    return logits, acts


def _step_sites(adapter: InspectableModel, runs: StepRuns, clean: Activations, which: Sequence[str]) -> list[Site]:
    """The step's sites, clean values from the clean run's window (its last row): each head, and the residual after
    each layer (0: the embeddings), written at the corrupted run's last position."""
    kind, last = adapter.family.kinds[0], len(runs.corrupted_ids) - 1
    position, token = len(runs.clean_ids) - 1, adapter.id_to_token(runs.clean_ids[-1])
    n_heads = adapter.head_counts()[kind][1]
    out: list[Site] = []
    if HEADS in which:
        for layer, acts in enumerate(clean.heads[kind]):
            width = acts.shape[-1] // n_heads
            out += [Site(HEADS, kind, layer, h, position, token,
                         (Patch(HEAD, kind, layer, (last,), acts[0, -1:, h * width:(h + 1) * width], head=h),))
                    for h in range(n_heads)]
    if RESIDUAL_STREAM in which:
        out += [Site(RESIDUAL_STREAM, "decoder", i, -1, position, token, (Patch(RESIDUAL, "decoder", i, (last,),
                                                                                acts[0, -1:]),))
                for i, acts in enumerate(clean.residual["decoder"])]
    return out


def _site_estimate(site: Site, acts: Activations, grads: dict[tuple[str, str, int], Tensor], start: int,
                   n_heads: dict[str, int]) -> float:
    """Σ over the site's patches of (a_clean − a_corrupted) · d metric / d a at its positions (window rows)."""
    total = 0.0
    for p in site.patches:
        now = (acts.residual if p.point == RESIDUAL else acts.heads)[p.where][p.index][0].detach().float()
        grad = grads[(p.point, p.where, p.index)]
        cols = slice(None)
        if p.head is not None:
            width = now.shape[-1] // n_heads[p.where]
            cols = slice(p.head * width, (p.head + 1) * width)
        rows = [q - start for q in p.positions]
        total += float(((p.value.float() - now[rows, cols]) * grad[rows, cols]).sum())
    return total


def _corrupted_window(adapter: InspectableModel, runs: PatchingSetup | StepRuns, keep: str
                      ) -> tuple[Tensor, Tensor, int]:
    """The corrupted run's source and fed ids and where its window starts: 0 (one block), or the target step's
    position when `keep` keeps the store (a setup, recorded whole, only when asked: keep="store")."""
    if isinstance(runs, StepRuns):
        if not adapter.family.prompt_in_decoder:
            raise InputError(f"{adapter.name} is not a decoder-only model: the step estimate reads one sequence.")
        if list(runs.clean_ids) == list(runs.corrupted_ids):
            raise InputError("The edited document reads the same as the clean one: change at least one word.")
        (src, tgt), longest = runs.run(1), max(len(runs.clean_ids), len(runs.corrupted_ids))
    else:
        (src, tgt), longest, keep = (runs.src[1], runs.tgt[1]), runs.tgt[1].shape[1], "store" if keep == "store" \
            else "maps"
    return src, tgt, tgt.shape[1] - 1 if keeps_store(adapter, longest - 1, keep) else 0


def _clean_sites(adapter: InspectableModel, runs: PatchingSetup | StepRuns, which: Sequence[str], start: int
                 ) -> tuple[list[Site], float]:
    """The sites the window holds, with their clean values, and the clean metric (a step's clean run read here)."""
    if isinstance(runs, PatchingSetup):
        sites = [s for s in sites_of(adapter, runs, which) if all(min(p.positions) >= start for p in s.patches)]
        return sites, runs.clean_metric
    src, tgt = runs.run(0)
    logits, clean = _window(adapter, src, tgt, tgt.shape[1] - 1 if start else 0, grad=False)
    return _step_sites(adapter, runs, clean, which), float(metric_of(adapter, logits, runs.token, runs.contrast)[0])


def estimate_patching(adapter: InspectableModel, runs: PatchingSetup | StepRuns, which: Sequence[str] = SITES, *,
                      keep: str = "auto", progress: Progress | None = None) -> PatchingEstimate:
    """Every site's estimated difference (`estimate`) and recovery, from one forward and one backward of the
    corrupted run's window; largest |estimate| first. `keep`, as a decode keeps its attention: a step's runs go in
    through the store ("store"; "auto" past `STORE_ABOVE`: only the step's position is a site) or whole ("maps"); a
    setup's whole unless keep="store". The numbers are the same either way."""
    if progress is not None:
        progress(0.0)
    src, tgt, start = _corrupted_window(adapter, runs, keep)
    sites, clean_metric = _clean_sites(adapter, runs, which, start)
    if progress is not None:
        progress(0.45)
    logits, acts = _window(adapter, src, tgt, start, grad=True)
    with adapter.differentiable():
        metric = metric_of(adapter, logits, runs.token, runs.contrast)[0]
        keys = [(RESIDUAL, s, i) for s, ts in acts.residual.items() for i in range(len(ts))]
        keys += [(HEAD, k, i) for k, ts in acts.heads.items() for i in range(len(ts))]
        tensors = [(acts.residual if p == RESIDUAL else acts.heads)[w][i] for p, w, i in keys]
        found = torch.autograd.grad(metric, tensors, allow_unused=True)
    grads = {key: (torch.zeros_like(t[0]) if g is None else g[0]).detach().float()
             for key, t, g in zip(keys, tensors, found, strict=True)}
    corrupted_metric = runs.corrupted_metric if isinstance(runs, PatchingSetup) else float(metric.detach())
    gap, n_heads = clean_metric - corrupted_metric, {k: h for k, (_, h) in adapter.head_counts().items()}
    rows = []
    for s in sites:
        estimate = _site_estimate(s, acts, grads, start, n_heads)
        rows.append({"site": s.site, "where": s.where, "layer": s.layer, "head": s.head, "position": s.position,
                     "token": s.token, "estimate": estimate,
                     "estimated_recovery": float("nan") if abs(gap) < BARELY else estimate / gap})
    frame = pd.DataFrame(rows, columns=ESTIMATE_COLUMNS)
    frame = frame.reindex(frame["estimate"].abs().sort_values(ascending=False, kind="stable").index)
    if progress is not None:
        progress(1.0)
    return PatchingEstimate(runs.token, runs.contrast, clean_metric, corrupted_metric, frame.reset_index(drop=True))


def preview_patching(adapter: InspectableModel, setup: PatchingSetup, which: Sequence[str] = SITES, *, top_k: int = 10,
                     progress: Progress | None = None) -> pd.DataFrame:
    """The estimate for every site, with the exact `difference` and `recovery` measured for the `top_k` sites of
    largest |estimate| (NaN for the others)."""
    estimate = estimate_patching(adapter, setup, which).frame
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
