"""EAP-IG against exact edge patching on every shipped model that has a circuit pair (issue 50, item 3;
docs/circuits.md, "How close the scores are"): every edge patched alone from the corrupted run, and the Spearman
correlation between the EAP-IG scores and those effects on the top 20 edges by |effect| among the edges that carry at
least 1% of the clean − corrupted gap (`circuits.agreement`); beside it the issue's first reading (the top 20 by
|score|), Pearson over every edge, the Spearman with every query and key edge's score replaced by its exact effect
(how much of a miss lies in edges into queries and keys, which interact), and the same comparison with the corruption
shrunk to 1% of the way (where the two sides must agree: they compute the same quantity). Pairs from the tasks' own
generators (`circuits.pairs`, seed 0) or a typed pair for the translation models; 5 and 20 integration steps
(midpoints), and other points: the reference implementation's left sum (α = k/5), the gradient at both ends only
("clean-corrupted"), 50 midpoints.
`python -m bench.quality.circuits_agreement [--pairs N]`."""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import torch

from transformer.adapters import InspectableModel
from transformer.analysis import spearman
from transformer.analysis.circuits import Pair, agreement, edge_scores, pair_from_text, pair_scores, shrunk
from transformer.analysis.circuits.pairs import edit_pairs, induction_pairs, recall_pairs
from transformer.store import open_model

LONG = False  # seconds a model
SHRUNK = 0.01  # the corruption's fraction where the attribution must match exact patching
POINTS = {"left5": [k / 5 for k in range(5)],  # the reference implementation's (Hanna et al.), from the corrupted end
          "clean_corrupted": [0.0, 1.0],  # the gradient at both ends only
          "mid50": [(k + 0.5) / 50 for k in range(50)]}


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


def figures(pairs: list[Pair]) -> dict:
    """The comparison at 5 and 20 steps, and at 5 steps on the shrunk corruption."""
    out: dict = {}
    graph = pairs[0].clean.graph
    qk = torch.tensor([graph.inputs[i].input in ("q", "k") for _, i in graph.edges()])
    for steps in (5, 20):
        scores = edge_scores(pairs, "eap-ig", ig_steps=steps)
        found = agreement(pairs, scores)
        out[f"ig{steps}"] = round(found.spearman, 3)
        if steps == 5:
            fixed = torch.where(qk, found.effects, scores.double())[list(found.edges)]  # how much of a miss is q/k's
            out |= {"edges": len(found.effects), "gap": round(found.gap, 2), "matter": found.matter,
                    "compared": len(found.edges), "caught": found.caught, "top20_by_score": round(found.by_score, 3),
                    "pearson": round(found.pearson, 3),
                    "qk_exact": round(float(spearman(fixed, found.effects[list(found.edges)])), 3)
                    if len(found.edges) >= 3 else math.nan}
    for rule, points in POINTS.items():  # where the gradient is taken between the corrupted and the clean input
        scores = sum(pair_scores(p, "eap-ig", points=points) for p in pairs) / len(pairs)
        out[rule] = round(agreement(pairs, scores).spearman, 3)
    small = [shrunk(p, SHRUNK) for p in pairs]
    near = agreement(small, edge_scores(small, "eap-ig"))
    return out | {"shrunk_spearman": round(near.spearman, 3), "shrunk_error": round(near.worst, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4, help="pairs a task model's batch holds (typed pairs: 1)")
    args = parser.parse_args()
    for name, make in CASES.items():
        pairs = make(open_model(f"checkpoints/{name}"), args.pairs)
        print({"model": name, "pairs": len(pairs), **figures(pairs)}, flush=True)


if __name__ == "__main__":
    main()
