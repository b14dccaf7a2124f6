"""EAP-IG's scores against exact edge patching (issue 50, item 3; docs/circuits.md, "How close the scores are").

Both sides estimate one quantity: the metric's drop when one edge takes its corrupted value, on the graph forward (the
same norms, target, answers, position alignment and sign), averaged over the batch of pairs (the mean of per-pair
effects on both sides). `shrunk` moves each pair's corrupted input towards the clean one; as it shrinks, the
attribution's error vanishes to first order whatever the model does, so agreement there says the two sides compute
the same thing, and what is left at the full corruption is the linear estimate's own limit (edges that interact).

`agreement` ranks the edges that matter by exact patching: every edge is patched alone, the edges whose effect is at
least `FLOOR` of the clean − corrupted gap are kept, the `TOP` largest by |effect| compared (Spearman of the signed
scores against the signed effects). Taking the top edges by |score| instead selects on the estimator (the edges it
overrates get in) and, on a model with few edges that matter, ranks effects that are a fraction of a percent of the gap.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ..attribution.agreement import spearman
from .faithfulness import baseline, edge_effects
from .target import LOGIT_DIFF, Pair

TOP = 20  # edges compared
FLOOR = 0.01  # of |clean − corrupted|: an edge below carries a negligible part of the behaviour


@dataclass(frozen=True)
class ShrunkPair(Pair):
    """A pair whose corrupted input lies `fraction` of the way from the clean input to its own (per position)."""

    fraction: float = 1.0

    def corrupted_embeddings(self) -> dict[str, Tensor]:
        """The clean embeddings moved `fraction` of the way to the corrupted ones (aligned as the pair aligns them)."""
        clean, corrupted = self.clean.embeddings(), super().corrupted_embeddings()
        return {s: clean[s] + self.fraction * (corrupted[s] - clean[s]) for s in clean}


def shrunk(pair: Pair, fraction: float) -> ShrunkPair:
    """`pair` with its corrupted input `fraction` (0..1] of the way from the clean one."""
    fields = {f.name: getattr(pair, f.name) for f in dataclasses.fields(Pair)}
    return ShrunkPair(**fields, fraction=fraction)


@dataclass(frozen=True)
class Agreement:
    """Scores against exact single-edge patching: the compared edges (top `TOP` by |effect| of those that matter), their
    Spearman, and figures over every edge."""

    effects: Tensor  # every edge's exact effect (n_edges,): mean clean metric − mean metric with that edge patched
    gap: float  # mean clean − mean corrupted metric
    matter: int  # edges whose |effect| ≥ FLOOR · |gap|
    edges: tuple[int, ...]  # the compared edges, by |effect|, largest first
    spearman: float  # on `edges` (nan for fewer than 3)
    caught: int  # of `edges`, how many the scores' top len(edges) by |score| hold
    by_score: float  # Spearman on the top TOP edges by |score| instead (the selection the estimator makes)
    pearson: float  # over every edge
    worst: float  # max |score − effect| over every edge, relative to the largest |effect|


def agreement(pairs: Sequence[Pair], scores: Tensor, *, top: int = TOP, floor: float = FLOOR,
              metric_name: str = LOGIT_DIFF) -> Agreement:
    """Every edge patched alone (averaged over `pairs`) against `scores` (n_edges,), compared where it matters."""
    base = baseline(pairs, metric_name)
    s = scores.double()
    effects = torch.tensor(edge_effects(pairs, range(len(s)), metric_name, base), dtype=torch.float64)
    matter = (effects.abs() >= floor * abs(base.gap)).nonzero()[:, 0]
    edges = matter[torch.argsort(effects[matter].abs(), descending=True, stable=True)[:top]]
    by_score = torch.argsort(s.abs(), descending=True, stable=True)[:top]
    pearson = torch.corrcoef(torch.stack([s, effects]))[0, 1]
    caught = set(by_score[:len(edges)].tolist()) & set(edges.tolist())
    return Agreement(effects, base.gap, len(matter), tuple(edges.tolist()),
                     float(spearman(s[edges], effects[edges])) if len(edges) >= 3 else math.nan, len(caught),
                     float(spearman(s[by_score], effects[by_score])), float(pearson),
                     float((s - effects).abs().max() / effects.abs().max().clamp(min=1e-12)))
