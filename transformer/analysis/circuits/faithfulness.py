"""A circuit checked by running it (the MIB benchmark's faithfulness, Mueller et al. 2025): the circuit of the top n
edges by |score| is run with every edge outside it taking its corrupted value, and its metric normalised,
(m(circuit) − m(corrupted)) / (m(clean) − m(corrupted)): 1 the whole clean behaviour, 0 none. The curve is taken at
fractions of the edges (MIB's grid), its area by the trapezoid rule over the fraction of edges kept; the smallest
circuit reaching `GOAL` is found between the grid's points by a search that runs `BATCH` circuits a forward (if none
reaches it, the best n found, with `reached` false).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .forward import Mixing, graph_forward
from .scores import plain_runs
from .target import LOGIT_DIFF, Pair, metric

GOAL = 0.8
FRACTIONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)  # MIB's edge-count grid


@dataclass(frozen=True)
class Baseline:
    """What every patched run of a batch is compared with: each pair's corrupted node outputs, and the mean clean and
    corrupted metrics."""

    corrupted: list[dict[str, Tensor]]
    clean_metric: float
    corrupted_metric: float

    @property
    def gap(self) -> float:
        return self.clean_metric - self.corrupted_metric


def baseline(pairs: Sequence[Pair], metric_name: str = LOGIT_DIFF) -> Baseline:
    """The batch's corrupted outputs and its mean clean and corrupted metrics (plain graph runs)."""
    corrupted, clean_m, corrupted_m = [], 0.0, 0.0
    for pair in pairs:
        clean_run, corrupted_run = plain_runs(pair)
        corrupted.append(corrupted_run.outs)
        clean_m += float(metric(metric_name, pair, clean_run.logits)[0])
        corrupted_m += float(metric(metric_name, pair, corrupted_run.logits)[0])
    return Baseline(corrupted, clean_m / len(pairs), corrupted_m / len(pairs))


BATCH = 8  # circuits run in one forward
EFFECTS_BATCH = 64  # single-edge patches run in one forward (`edge_effects`)


def patched_metrics(pairs: Sequence[Pair], base: Baseline, keeps: Sequence[Tensor], metric_name: str = LOGIT_DIFF,
                    batch: int = BATCH) -> list[float]:
    """The mean metric of each circuit: the edges where its mask `keeps[c]` (n_edges,) is 0 patched from the corrupted
    run; `batch` circuits a forward."""
    sizes = [inp.n_up for inp in pairs[0].clean.graph.inputs]
    out: list[float] = []
    for first in range(0, len(keeps), batch):
        chunk = torch.stack([k.float() for k in keeps[first:first + batch]], 1)  # (n_edges, C)
        parts = list(torch.split(chunk, sizes))
        total = torch.zeros(chunk.shape[1])
        with torch.no_grad():
            for pair, corrupted in zip(pairs, base.corrupted, strict=True):
                emb = {s: e.expand(chunk.shape[1], *e.shape[1:]) for s, e in pair.clean.embeddings().items()}
                run = graph_forward(pair.clean, emb, Mixing(corrupted, parts))
                total += metric(metric_name, pair, run.logits)
        out += (total / len(pairs)).tolist()
    return out


def patched_metric(pairs: Sequence[Pair], base: Baseline, keep: Tensor, metric_name: str = LOGIT_DIFF) -> float:
    """The mean metric with the edges where `keep` (n_edges,) is 0 patched from the corrupted run."""
    return patched_metrics(pairs, base, [keep], metric_name)[0]


def top_edges(scores: Tensor, n: int) -> Tensor:
    """The mask (n_edges,) of the n edges of largest |score| (ties: the first in graph order)."""
    keep = torch.zeros(len(scores))
    keep[torch.argsort(scores.abs(), descending=True, stable=True)[:n]] = 1.0
    return keep


@dataclass(frozen=True)
class Faithfulness:
    """The curve {n: normalised metric}, its area over the fraction of edges, the smallest n reaching `GOAL`."""

    points: dict[int, float]
    area: float
    n: int  # the smallest circuit reaching GOAL, or the best one found
    reached: bool


def faithfulness(pairs: Sequence[Pair], scores: Tensor, metric_name: str = LOGIT_DIFF, *, goal: float = GOAL,
                 base: Baseline | None = None, progress: Callable[[float], None] | None = None) -> Faithfulness:
    """The faithfulness curve of circuits of the top-scored edges, its area and the smallest circuit reaching `goal`."""
    base = baseline(pairs, metric_name) if base is None else base
    total = len(scores)
    grid = sorted({max(1, round(f * total)) for f in FRACTIONS} | {total})
    points: dict[int, float] = {0: 0.0}

    def measure(ns: Sequence[int]) -> None:
        ns = [n for n in ns if n not in points]
        for n, m in zip(ns, patched_metrics(pairs, base, [top_edges(scores, n) for n in ns], metric_name),
                        strict=True):
            points[n] = (m - base.corrupted_metric) / base.gap if base.gap else float("nan")

    measure(grid)
    if progress is not None:
        progress(0.8)
    above = [n for n in grid if points[n] >= goal]
    if above:
        hi = above[0]
        lo = max([n for n in points if n < hi], default=0)
        while hi - lo > 1:  # BATCH evenly spaced circuits between the last below and the first above, one forward
            step = max(1, (hi - lo) // (BATCH + 1))
            measure(range(lo + step, hi, step))
            lo = max(n for n in points if lo <= n < hi and points[n] < goal)
            hi = min(n for n in points if lo < n <= hi and points[n] >= goal)
        n, reached = hi, True
    else:
        n, reached = max(grid, key=lambda k: (points[k], -k)), False
    xs = [0, *grid]
    area = sum((xs[i + 1] - xs[i]) / total * (points[xs[i]] + points[xs[i + 1]]) / 2 for i in range(len(xs) - 1))
    return Faithfulness(dict(sorted(points.items())), area, n, reached)


def edge_effects(pairs: Sequence[Pair], edges: Sequence[int], metric_name: str = LOGIT_DIFF,
                 base: Baseline | None = None) -> list[float]:
    """Exact edge patching: for each edge (index), clean metric − the metric with only that edge patched."""
    base = baseline(pairs, metric_name) if base is None else base
    n_edges = sum(inp.n_up for inp in pairs[0].clean.graph.inputs)
    keeps = []
    for e in edges:
        keep = torch.ones(n_edges)
        keep[e] = 0.0
        keeps.append(keep)
    return [base.clean_metric - m for m in patched_metrics(pairs, base, keeps, metric_name, EFFECTS_BATCH)]
