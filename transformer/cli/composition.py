"""`python -m transformer composition MODEL`: heads that build on heads (docs/why-it-looks-there.md).

The Q-, K- and V-composition scores of Elhage et al. 2021 between every head and every later head that reads its
output, every kind (an encoder head feeding a cross-attention head's keys is K-composition across the stack): the
strongest pairs of each type, or with --json every pair as {from, to, q, k, v} (null where that reader does not read
the writer that way).
"""
from __future__ import annotations

import argparse
import json

from ..adapters import ResidualPathError
from ..analysis import COMPOSITION_MODES, composition_scores, strongest
from ..decode import InputError
from ..store import finite_json, open_model
from . import HELP
from .common import Commands, add_model_arguments, positive_int


def register(commands: Commands) -> None:
    """Add `composition` and its flags."""
    p = commands.add_parser("composition", help=HELP["composition"],
                            description="Score how much each later head's queries, keys and values read each earlier "
                            "head's output (Elhage et al. 2021), every kind, from the weights alone.")
    p.add_argument("dir", metavar="MODEL", help="our checkpoint folder, a Hugging Face folder or a hub id")
    p.add_argument("--top", type=positive_int, default=10, metavar="N", help="pairs printed per type (default 10)")
    p.add_argument("--json", action="store_true", help="print every pair as one JSON list")
    add_model_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """`composition`: the strongest pairs of each type, or every pair as JSON."""
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    try:
        frame = composition_scores(adapter)
    except ResidualPathError as exc:
        raise InputError(str(exc)) from None
    if args.json:
        print(json.dumps(finite_json(frame.to_dict("records"))))
        return 0
    print(f"{adapter.name}: {len(frame):,} pairs of heads where the later reads the earlier")
    for mode in COMPOSITION_MODES:
        top = strongest(frame, mode, args.top)
        if top.empty:
            continue
        print(f"\n{mode.upper()}-composition, strongest:")
        for _, row in top.iterrows():
            print(f"  {row['from']:<12} -> {row['to']:<12} {row[mode]:.3f}")
    return 0
