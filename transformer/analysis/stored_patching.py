"""The patching estimate at one decode step of a long input (attribution patching restricted to the step's
position): each head's output and each layer's residual at the step's position, copied from the clean run into the
corrupted one, moves the metric by (a_clean - a_corrupted) . d metric / d a to first order.

At a causal model's last position nothing earlier depends on that position, so the gradient there is the gradient
of the step alone, the earlier positions' keys and values held fixed: each run's prefix goes through the fused
store path once (no n x n map, no gradient), then the step's one token is run with gradients against that cache.
The numbers are `estimate_patching`'s for the same sites (its head sites of a decoder-only model are the last
position's)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import Tensor

from ..adapters import InspectableModel, store_chunks, store_feed
from ..adapters.patching import Activations, patch_points, recording_activations
from ..decode import InputError
from .head_sweep import Progress
from .patching import BARELY, metric_of
from .patching_sites import HEADS, RESIDUAL_STREAM

STEP_COLUMNS = ["site", "layer", "head", "estimate", "estimated_recovery"]


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


def _run(adapter: InspectableModel, ids: Sequence[int], n_source: int | None, grad: bool
         ) -> tuple[Tensor, Activations]:
    """The step's logits (1, V) after `ids` (the prefix through the fused store path, no gradient; the last id with
    gradients if `grad`) and the patchable activations of that last position."""
    if len(ids) < 2:
        raise InputError("The step needs at least one token before it.")
    chunks, ids_t = store_chunks(adapter), torch.tensor([list(ids)])
    first = len(ids) - 1 if n_source is None else n_source  # all but the start by default, as a stored decode
    with adapter.differentiable() if grad else adapter.running():
        encoded = adapter.encode(ids_t[:, : n_source or 0])
        cache = adapter.start_cache(encoded)
        store_feed(adapter, ids_t[:, :-1], cache, chunks, first)
        del chunks  # the prefix's store is not needed: only its cache
        with recording_activations(patch_points(adapter), detach=not grad) as acts:
            logits = _step_logits(adapter, ids_t[:, -1:], cache)
    return logits, acts


def _step_logits(adapter: InspectableModel, ids: Tensor, cache: object) -> Tensor:
    """(1, V) logits of one fed id after `cache`, through the model's own modules (gradients flow; the decode's
    fast output head keeps an inference-mode copy of the weights, so it is not used here)."""
    network: Any = adapter.network
    if hasattr(network, "get_output_embeddings"):  # a Hugging Face causal LM
        return network(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
    return network.feed(ids, cache, 0, need_weights=False).logits


def step_patching_estimate(adapter: InspectableModel, clean_ids: Sequence[int], corrupted_ids: Sequence[int],
                           token: int, contrast: int | None = None, *,
                           n_source: int | tuple[int | None, int | None] | None = None,
                           progress: Progress | None = None) -> StepPatching:
    """Every head's and residual's estimate at the step whose query is the last of `clean_ids` / `corrupted_ids`
    (each a decoder-only model's whole fed sequence up to that step), for the metric log p(token) [- log
    p(contrast)]. `n_source`: source ids at the start (our decoder-only models), as the stored decode's prefill; one
    for both runs or (clean, corrupted)."""
    sources = n_source if isinstance(n_source, tuple) else (n_source, n_source)
    if not adapter.family.prompt_in_decoder:
        raise InputError(f"{adapter.name} is not a decoder-only model: the step estimate reads one sequence.")
    if list(clean_ids) == list(corrupted_ids):
        raise InputError("The edited document reads the same as the clean one: change at least one word.")
    if progress is not None:
        progress(0.0)
    clean_logits, clean = _run(adapter, clean_ids, sources[0], grad=False)
    if progress is not None:
        progress(0.45)
    corrupted_logits, corrupted = _run(adapter, corrupted_ids, sources[1], grad=True)
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
