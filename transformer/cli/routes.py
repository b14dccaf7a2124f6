"""`python -m transformer routes MODEL TEXT`: the route of each output token (docs/why-it-looks-there.md).

Ferrando & Voita's information flow routes (2024) for one decode step, or every step: the graph of the residual
streams' points (encoder and decoder, each position after each sublayer) and what each self-attention head, each
cross-attention head (from each source position), each MLP and the residual connection add into them, weighted by
proximity, kept from the node that predicts the step's token downwards while above --threshold. ("flow" is attention
flow, Abnar & Zuidema, beside rollout.)
"""
from __future__ import annotations

import argparse
import json

from ..adapters import ResidualPathError
from ..analysis import RESIDUAL, ROUTE_THRESHOLD, decode_parts, node_label, route_dict, step_route
from ..decode import InputError
from ..store import finite_json, open_model
from . import HELP
from .common import Commands, add_model_arguments, positive_int, printable


def _threshold(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, got {text}")
    return value


def register(commands: Commands) -> None:
    """Add `routes` and its flags."""
    p = commands.add_parser("routes", help=HELP["routes"],
                            description="Information flow routes (Ferrando & Voita 2024): for a decode step, the "
                            "edges through each self-attention head, cross-attention head and MLP into the point "
                            "that predicts its token, kept while their proximity-weighted importance is above the "
                            "threshold.")
    p.add_argument("dir", metavar="MODEL", help="our checkpoint folder, a Hugging Face folder or a hub id")
    p.add_argument("text", metavar="TEXT", help="the input")
    p.add_argument("--step", type=positive_int, metavar="S", help="this output token (1-based; default every step)")
    p.add_argument("--threshold", type=_threshold, default=ROUTE_THRESHOLD, metavar="T",
                   help=f"keep edges whose importance is above T (default {ROUTE_THRESHOLD})")
    p.add_argument("--top", type=positive_int, default=8, metavar="N", help="edges printed per step (default 8)")
    p.add_argument("--json", action="store_true", help="one JSON object (a list of them without --step)")
    add_model_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """`routes`: each step's strongest edges, or the route graphs as JSON."""
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    if not adapter.family.decodes:
        raise InputError(f"{adapter.name} is an encoder-only model: routes follow a decode step, and it has none")
    try:
        parts = decode_parts(adapter, args.text)
        steps = [args.step] if args.step is not None else list(range(1, parts.n_steps + 1))
        graph, found = None, []
        for step in steps:
            made, graph = step_route(parts, step, args.threshold, graph)
            found.append(route_dict(graph, made, parts, step))
    except ResidualPathError as exc:
        raise InputError(str(exc)) from None
    if args.json:
        print(json.dumps(finite_json(found[0] if args.step is not None else found)))
        return 0
    for out in found:
        assert graph is not None  # a step was routed
        through = [e for e in out["edges"] if e["via"] != RESIDUAL]
        start = node_label(graph, ("decoder", graph.last("decoder"), parts.step_row(out["step"])))
        print(f"step {out['step']} {printable(out['token'])!r}: {len(out['nodes'])} nodes, {len(out['edges'])} edges "
              f"above {out['threshold']} (from {start})")
        for e in sorted(through, key=lambda e: -e["importance"])[: args.top]:
            print(f"  {e['from']:<18} -> {e['to']:<18} via {e['via']:<14} {e['importance']:.3f}")
    return 0
