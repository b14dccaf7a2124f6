"""EAP-IG against exact edge patching on every shipped model that has a circuit pair (issue 50, item 3): the
Spearman correlation between the EAP-IG scores of the top 20 edges (by |score|) and the metric change of patching each
of those edges alone from the corrupted run. The test suite holds this at ≥ 0.8 on `checkpoints/reverse` and a tiny
Gemma 2 (tests/library/analysis/test_circuits.py); this measures the rest, with pairs from the tasks' own generators
(`circuits.pairs`, seed 0) or a typed pair for the translation models, at 5 and 20 integration steps.
`python -m bench.quality.circuits_agreement [--pairs N]`."""
from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from transformer.adapters import InspectableModel
from transformer.analysis import spearman
from transformer.analysis.circuits import Pair, edge_effects, edge_scores, pair_from_text
from transformer.analysis.circuits.pairs import edit_pairs, induction_pairs, recall_pairs
from transformer.store import open_model

LONG = False  # seconds a model
TOP = 20


def _typed(clean: str, corrupted: str) -> Callable[[InspectableModel, int], list[Pair]]:
    return lambda adapter, n: [pair_from_text(adapter, clean, corrupted)]


CASES: dict[str, Callable[[InspectableModel, int], list[Pair]]] = {
    "reverse": _typed("abcdefghij", "abcdefghik"),
    "reverse-decoder-only": lambda a, n: edit_pairs(a, n=n, seed=0),
    "sort": lambda a, n: edit_pairs(a, n=n, seed=0),
    "induction": lambda a, n: induction_pairs(a, n=n, seed=0),
    "recall": lambda a, n: recall_pairs(a, n=n, seed=0),
    "toy-en-de": _typed("a man rides a bike", "a woman rides a bike"),
    "multi30k-en-de": _typed("a man rides a bike", "a woman rides a bike"),
}


def agreement(pairs: list[Pair], ig_steps: int) -> float:
    """Spearman of EAP-IG's top edges against their exact single-edge patching effects."""
    scores = edge_scores(pairs, "eap-ig", ig_steps=ig_steps)
    top = torch.argsort(scores.abs(), descending=True)[:TOP]
    return float(spearman(scores[top], torch.tensor(edge_effects(pairs, top.tolist()))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4, help="pairs a task model's batch holds (typed pairs: 1)")
    args = parser.parse_args()
    for name, make in CASES.items():
        adapter = open_model(f"checkpoints/{name}")
        pairs = make(adapter, args.pairs)
        figures = {steps: round(agreement(pairs, steps), 3) for steps in (5, 20)}
        print({"model": name, "pairs": len(pairs), "spearman_ig5": figures[5], "spearman_ig20": figures[20]},
              flush=True)


if __name__ == "__main__":
    main()
