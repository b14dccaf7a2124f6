"""Edge scores by attribution: EAP (Syed et al. 2023, "Attribution Patching Outperforms Automated Circuit Discovery")
and EAP-IG (Hanna et al. 2024, "Have Faith in Faithfulness"; the MIB benchmark's best circuit finder).

An edge u → v carries (out_u(clean) − out_u(corrupted)) into v's input; patching it changes the metric by about
minus that difference times the metric's gradient at v's input, so its score is
    score(u → v) = (out_u(clean) − out_u(corrupted)) · ∂M/∂in_v,
summed over positions: positive when the edge carries the clean answer (in a post-norm model each output as it reaches
v's input, through the norms frozen at the clean run). EAP takes the gradient on the clean run (one
backward); EAP-IG averages it over `ig_steps` runs whose embeddings lie between the corrupted and the clean ones
(midpoints α = (k − ½)/K, all in one batch: one forward and one backward). Over a batch of pairs the scores average.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from ...decode import InputError
from .forward import GraphRun, graph_forward
from .target import LOGIT_DIFF, Pair, metric

EAP, EAP_IG = "eap", "eap-ig"
METHODS = (EAP, EAP_IG)
IG_STEPS = 5
Progress = Callable[[float], None]


def plain_runs(pair: Pair) -> tuple[GraphRun, GraphRun]:
    """The clean and the corrupted graph runs (every node's output per stack, (N, 1, T, D), and the logits), no
    gradients."""
    with torch.no_grad():
        return graph_forward(pair.clean), graph_forward(pair.clean, pair.corrupted_embeddings())


def pair_scores(pair: Pair, method: str = EAP_IG, ig_steps: int = IG_STEPS, metric_name: str = LOGIT_DIFF, *,
                points: Sequence[float] | None = None) -> Tensor:
    """Every edge's score (n_edges,) on one pair, in `CircuitGraph.edges()` order; `points`: EAP-IG's α (0: the
    corrupted input, 1: the clean one) instead of the midpoints (the benchmark compares other rules)."""
    if method not in METHODS:
        raise InputError(f"--method {method!r}: use {' or '.join(METHODS)}")
    if ig_steps < 1:
        raise InputError("--ig-steps must be at least 1")
    plan, graph = pair.clean, pair.clean.graph
    with torch.no_grad():  # each node's output, and where frozen norms changed it, what each input read of it
        runs = graph_forward(plan, arrivals=True), graph_forward(plan, pair.corrupted_embeddings(), arrivals=True)
    clean, corrupted = runs[0].outs, runs[1].outs
    alphas = [1.0] if method == EAP else list(points or [(k + 0.5) / ig_steps for k in range(ig_steps)])
    a = torch.tensor(alphas).view(-1, 1, 1)
    emb = {s: corrupted[s][0] + a * (clean[s][0] - corrupted[s][0]) for s in clean}  # (K, T, D)
    with plan.adapter.differentiable():
        run = graph_forward(plan, emb, probes=True)
        value = metric(metric_name, pair, run.logits).sum()
        if not value.requires_grad:
            raise InputError(f"{plan.adapter.name}: no gradient reaches the metric, so edges cannot be scored.")
        grads = torch.autograd.grad(value, [leaf for _, leaf in run.probes], allow_unused=True)
    scores: list[Tensor] = [torch.zeros(0)] * len(graph.inputs)
    diff = {s: (clean[s] - corrupted[s])[:, 0] for s in clean}  # (N, T, D)
    for (idxs, leaf), grad in zip(run.probes, grads, strict=True):
        g = torch.zeros_like(leaf) if grad is None else grad
        g = g.sum(1) / len(alphas)  # (V, T, D) or, at the logits, (V, D)
        first = graph.inputs[idxs[0]]
        if idxs[0] in runs[0].arrived:  # through the norms frozen at the clean run since each node wrote it
            d = (runs[0].arrived[idxs[0]] - runs[1].arrived[idxs[0]])[:, 0]
        else:
            d = diff[first.source][:first.n_up]
        if g.dim() == 2:  # the logits read one position
            d = d[:, plan.position]
        found = torch.einsum("n...,v...->nv", d, g)
        for v, i in enumerate(idxs):
            scores[i] = found[:, v]
    return torch.cat(scores)


def edge_scores(pairs: Sequence[Pair], method: str = EAP_IG, ig_steps: int = IG_STEPS,
                metric_name: str = LOGIT_DIFF, progress: Progress | None = None) -> Tensor:
    """The scores averaged over a batch of pairs (n_edges,); `progress` (may raise to cancel) after each pair."""
    total = None
    for i, pair in enumerate(pairs):
        found = pair_scores(pair, method, ig_steps, metric_name)
        total = found if total is None else total + found
        if progress is not None:
            progress((i + 1) / len(pairs))
    assert total is not None, "at least one pair"
    return total / len(pairs)
