"""`python -m transformer circuit MODEL CLEAN CORRUPTED`: the circuit that carries the answer (docs/circuits.md).

Scores every edge (from the embeddings, a head or an MLP into a later head's query, key or value, an MLP or the
logits) by edge attribution — EAP-IG by default, or EAP — on the clean/corrupted pair, and checks the circuits of the
top edges by real edge patching: the faithfulness curve, its area and the smallest circuit keeping 0.8 of the metric.
A table, or one JSON object with --json (progress on stderr).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..adapters import ResidualPathError
from ..analysis import (
    CIRCUIT_IG_STEPS,
    CIRCUIT_METRICS,
    EAP,
    EAP_IG,
    LOGIT_DIFF,
    CircuitResult,
    find_circuit,
    pair_from_text,
)
from ..decode import InputError
from ..store import finite_json, open_model
from . import HELP
from .common import Commands, add_model_arguments, positive_int, printable


def register(commands: Commands) -> None:
    """Add `circuit` and its flags."""
    p = commands.add_parser("circuit", help=HELP["circuit"],
                            description="Score every edge into a head's query, key or value, an MLP or the logits by "
                            "edge attribution (EAP-IG or EAP), then check the circuits of the top edges by patching "
                            "every other edge from the corrupted run (a faithfulness curve).")
    p.add_argument("dir", metavar="MODEL", help="our checkpoint folder, a Hugging Face folder or a hub id")
    p.add_argument("clean", metavar="CLEAN", help="the clean input")
    p.add_argument("corrupted", metavar="CORRUPTED", help="the edited (corrupted) input")
    p.add_argument("--method", choices=(EAP, EAP_IG), default=EAP_IG, help="edge attribution: eap (one backward) or "
                   "eap-ig (integrated gradients, the default)")
    p.add_argument("--ig-steps", type=positive_int, default=CIRCUIT_IG_STEPS, metavar="K",
                   help=f"EAP-IG's points between the corrupted and the clean input (default {CIRCUIT_IG_STEPS})")
    p.add_argument("--step", type=positive_int, metavar="N", help="the clean output's token N (1-based) is the "
                   "target (default: the first step where the corrupted run chooses another token)")
    p.add_argument("--contrast", metavar="TOKEN", help="the metric's second answer (default: the corrupted run's "
                   "own token at the target)")
    p.add_argument("--metric", choices=CIRCUIT_METRICS, default=LOGIT_DIFF, help="logit-diff (clean answer - corrupted "
                   "answer, the default), logprob (the clean answer's) or kl (minus KL to the clean distribution)")
    p.add_argument("--top", type=positive_int, default=20, metavar="N", help="edges the table lists (--json lists "
                   "every edge)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_model_arguments(p)
    p.set_defaults(run=run)


def _progress(fraction: float) -> None:
    print(f"\rcircuit: {fraction:4.0%}", end="" if fraction < 1 else "\n", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """`circuit`: the ranked edges, the faithfulness curve and the circuit, as a table or JSON."""
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    try:
        pair = pair_from_text(adapter, args.clean, args.corrupted, step=None if args.step is None else args.step - 1,
                              contrast=args.contrast)
        result = find_circuit([pair], method=args.method, ig_steps=args.ig_steps, metric_name=args.metric,
                              progress=_progress)
    except ResidualPathError as e:
        raise InputError(str(e)) from None
    out: dict[str, Any] = {"clean": args.clean, "corrupted": args.corrupted, **result.as_json()}
    if args.json:
        print(json.dumps(finite_json(out)))
        return 0
    _print_table(result, args.top)
    return 0


def _print_table(result: CircuitResult, top: int) -> None:
    f = result.faithfulness
    where = f"output token {result.step + 1}" if result.step is not None else "the mask"
    print(f"{result.model}: {result.method} ({result.ig_steps} steps) at {where}; metric {result.metric} "
          f"({printable(result.answer)!r} vs {printable(result.contrast)!r}): clean {result.clean_metric:.4f}, "
          f"corrupted {result.corrupted_metric:.4f}")
    print(f"top {min(top, len(result.edges))} of {len(result.edges)} edges (score: how much of the metric the edge "
          "carries):")
    for e in result.ranked()[:top]:
        print(f"  {e.source:>16} -> {e.target:<16} {e.input:<6} {e.score:>10.4f}")
    print("faithfulness (edges kept: share of the clean metric): "
          + ", ".join(f"{n}: {v:.2f}" for n, v in f.points.items()))
    state = "reaches" if f.reached else "does not reach (best found)"
    print(f"area {f.area:.3f}; the smallest circuit that {state} 0.8 has {f.n} edges")
