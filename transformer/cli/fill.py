"""`python -m transformer fill MODEL TEXT`: an encoder-only model's predictions at each mask (BERT, RoBERTa,
DistilBERT, ModernBERT). The mask is the model's own token typed in TEXT ([MASK], <mask>), or tokens picked with
--mask-token I (0-based positions among the tokens the model reads). A pair's second sentence with --pair.
"""
from __future__ import annotations

import argparse
import json

from ..adapters import DEFAULT_MAX_PARAMS
from ..analysis import head_mask
from ..decode import InputError, fill_masks, no_mask_message
from ..store import finite_json, open_model
from . import HELP
from .common import Commands, parse_ablate, positive_int, write_output


def register(commands: Commands) -> None:
    """Add `fill` and its flags."""
    p = commands.add_parser("fill", help=HELP["fill"],
                            description="An encoder-only (masked) model's top-k predictions at each mask in the "
                            "input: the model's own mask token typed in TEXT, or tokens picked with --mask-token.")
    p.add_argument("dir", metavar="MODEL", help="a Hugging Face masked-LM folder or hub id (BERT, RoBERTa, ...)")
    p.add_argument("text", metavar="TEXT", help="the input, with the model's mask token where a word is predicted")
    p.add_argument("--pair", metavar="TEXT", default="", help="a second sentence (the pair's segment B)")
    p.add_argument("--mask-token", type=int, action="append", default=[], metavar="I",
                   help="also mask the token at position I (0-based, specials counted; repeatable)")
    p.add_argument("--top-k", type=positive_int, default=5, metavar="K", help="predictions per mask (default 5)")
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/formats.md, fill JSON)")
    p.add_argument("--trace-json", metavar="PATH", help="write the fill JSON with every kind's maps here")
    p.add_argument("--ablate", action="append", metavar="HEADS", help="switch heads off, e.g. enc:L1H2 (1-based)")
    p.add_argument("--max-params", type=positive_int, default=DEFAULT_MAX_PARAMS, metavar="N",
                   help=f"refuse models above N parameters (default {DEFAULT_MAX_PARAMS:,})")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """`fill`: print each mask's top-k (or the JSON); optionally write the fill JSON with the maps."""
    adapter = open_model(args.dir, max_params=args.max_params)
    mask = head_mask(adapter, parse_ablate(args.ablate, adapter)) if args.ablate else None
    result = fill_masks(adapter, args.text, args.pair, mask_positions=args.mask_token, top_k=args.top_k, head_mask=mask)
    if not result.predictions:
        raise InputError(no_mask_message(adapter))
    if args.trace_json:
        write_output(args.trace_json, result.to_json())
    if args.json:
        data = result.to_dict()
        data.pop("attention")
        print(json.dumps(finite_json({"model": args.dir, **data})))
        return 0
    for p in result.predictions:
        top = "  ".join(f"{t} {v:.3f}" for t, _, v in p.top_k)
        print(f"{p.position:>3}  {top}")
    return 0
