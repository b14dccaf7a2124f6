"""`find_circuit`: score every edge (EAP or EAP-IG) over a batch of pairs, rank them by |score| and check the circuits
of the top edges by real edge patching; one typed result, with the `circuit --json` object."""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import torch

from ...decode import InputError
from .faithfulness import GOAL, Faithfulness, baseline, faithfulness
from .graph import CircuitGraph
from .scores import EAP_IG, IG_STEPS, Progress, edge_scores
from .target import LOGIT_DIFF, METRICS, Pair


@dataclass(frozen=True)
class EdgeScore:
    """One edge: from an upstream node's output into `target`'s `input` (q, k, v, mlp or logits), and its score."""

    source: str
    target: str
    input: str
    score: float

    def record(self) -> dict:
        """{from, to, input, score}: the form `circuit --json` lists."""
        return {"from": self.source, "to": self.target, "input": self.input, "score": self.score}


@dataclass(frozen=True)
class CircuitResult:
    """Every edge's score (graph order), the faithfulness of circuits of the top edges, and what they explain."""

    model: str
    method: str
    ig_steps: int
    metric: str
    graph: CircuitGraph
    edges: tuple[EdgeScore, ...]
    faithfulness: Faithfulness
    clean_metric: float
    corrupted_metric: float
    n_pairs: int
    step: int | None  # 0-based output step of the (first) pair; None for a mask
    answer: str
    contrast: str
    seconds: float

    @cached_property
    def _order(self) -> list[int]:
        """Edge indices by |score|, largest first (ties in graph order), sorted once per result."""
        return torch.argsort(torch.tensor([abs(e.score) for e in self.edges]), descending=True, stable=True).tolist()

    def ranked(self) -> list[EdgeScore]:
        """The edges by |score|, largest first (ties in graph order), as circuits take them."""
        return [self.edges[i] for i in self._order]

    def top(self, n: int) -> list[EdgeScore]:
        """The circuit of the top n edges."""
        return [self.edges[i] for i in self._order[:n]]

    def circuit(self) -> list[EdgeScore]:
        """The smallest circuit reaching the goal (or the best one found: `faithfulness.reached` says which)."""
        return self.top(self.faithfulness.n)

    def heads(self, n: int | None = None) -> set[str]:
        """The nodes the top-n edges (default: the circuit) touch, logits and embeddings included."""
        edges = self.circuit() if n is None else self.top(n)
        return {e.source for e in edges} | {e.target for e in edges}

    def as_json(self) -> dict:
        """The `circuit --json` object: every edge signed whatever --top, the curve, the circuit."""
        f = self.faithfulness
        return {"model": self.model, "method": self.method, "ig_steps": self.ig_steps, "metric": self.metric,
                "pairs": self.n_pairs, "step": None if self.step is None else self.step + 1, "answer": self.answer,
                "contrast": self.contrast, "clean_metric": self.clean_metric,
                "corrupted_metric": self.corrupted_metric, "n_edges": len(self.edges),
                "edges": [e.record() for e in self.edges],
                "faithfulness": [{"n": n, "value": v} for n, v in f.points.items()], "area": f.area, "goal": GOAL,
                "reached": f.reached, "circuit_size": f.n, "circuit": [e.record() for e in self.circuit()],
                "seconds": round(self.seconds, 3)}


def find_circuit(pairs: Sequence[Pair], *, method: str = EAP_IG, ig_steps: int = IG_STEPS,
                 metric_name: str = LOGIT_DIFF, progress: Progress | None = None) -> CircuitResult:
    """Scores averaged over `pairs` (one model's), their faithfulness curve and smallest circuit; `progress` (0..1,
    may raise to cancel) as it goes."""
    if not pairs:
        raise InputError("No pairs: give a clean and a corrupted input.")
    if metric_name not in METRICS:
        raise InputError(f"--metric {metric_name!r}: use {', '.join(METRICS)}")
    start = time.perf_counter()
    scores = edge_scores(pairs, method, ig_steps, metric_name, None if progress is None else lambda f: progress(f / 2))
    base = baseline(pairs, metric_name)
    if abs(base.gap) < 1e-6:
        raise InputError("The corrupted input leaves the metric where the clean one has it: there is nothing to find.")
    found = faithfulness(pairs, scores, metric_name, base=base,
                         progress=None if progress is None else lambda f: progress(0.5 + f / 2))
    graph = pairs[0].clean.graph
    edges = tuple(EdgeScore(u, graph.inputs[i].node, graph.inputs[i].input, float(s))
                  for (u, i), s in zip(graph.edges(), scores, strict=True))
    first = pairs[0]
    adapter = first.clean.adapter
    if progress is not None:
        progress(1.0)
    return CircuitResult(adapter.name, method, ig_steps, metric_name, graph, edges, found, base.clean_metric,
                         base.corrupted_metric, len(pairs), first.step, adapter.id_to_token(first.answer),
                         adapter.id_to_token(first.contrast), time.perf_counter() - start)
