"""`python -m transformer qk MODEL TEXT --head KIND:LlHh --query I --key J`: one attention score taken apart
(docs/why-it-looks-there.md).

The residual stream at the query and at the key is a sum of parts (embeddings, positions, each earlier head and MLP,
biases); through the norms on the way (frozen at this input) and W_Q / W_K, the score is a sum over pairs (query
part, key part) plus the model's additive terms (mask, T5's position bias). I and J are 1-based positions on the
head's query and key axes, counting the tokens the model reads (specials included); a decoder position is an output
position. With --step S the decode is read up to step S, and the query defaults to the position producing it.

With --dictionary DIR (twice for a cross-attention: the decoder stream's and the encoder output's) each side's
stream is taken apart into the dictionary's active features plus an error and a bias term instead: `pairs` are
(query feature, key feature) records, `terms` everything else, and they sum to the score (docs/dictionaries.md).
"""
from __future__ import annotations

import argparse
import json
import math

from ..adapters import ResidualPathError
from ..analysis import QKTable, decode_parts, qk_attribution
from ..decode import InputError
from ..dictionaries import FeatureQKTable, feature_qk, load_dictionary
from ..model import SOURCE, Head, HeadError
from ..store import finite_json, open_model
from . import HELP
from .common import Commands, add_model_arguments, positive_int, printable

HIDDEN = -1e30  # a term at or below this is a mask that hides the key (-inf, or the dtype's minimum)


def register(commands: Commands) -> None:
    """Add `qk` and its flags."""
    p = commands.add_parser("qk", help=HELP["qk"],
                            description="Take the score of one head at (query, key) apart: each pair (query part, "
                            "key part) of the residual stream's parts (embed, pos, each earlier head, each MLP, bias) "
                            "through the norms and W_Q / W_K, plus the model's additive terms.")
    p.add_argument("dir", metavar="MODEL", help="our checkpoint folder, a Hugging Face folder or a hub id")
    p.add_argument("text", metavar="TEXT", help="the input")
    p.add_argument("--head", required=True, metavar="KIND:LlHh", help="the head, e.g. cross:L1H2 (enc, dec, cross, "
                   "self)")
    p.add_argument("--query", type=positive_int, metavar="I", help="the query position on the head's query axis, "
                   "1-based, specials included (default with --step: the position producing that step's token)")
    p.add_argument("--key", type=positive_int, required=True, metavar="J", help="the key position, 1-based")
    p.add_argument("--step", type=positive_int, metavar="S", help="read the decode up to output token S (1-based)")
    p.add_argument("--top", type=positive_int, default=15, metavar="N",
                   help="pairs printed (default 15; --json has all)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--dictionary", action="append", metavar="DIR", help="take the score apart into this "
                   "dictionary's features (a SAELens folder at the stream the head reads, resid:L<l> for a layer-l "
                   "head); twice for a cross-attention (its decoder stream's and resid:enc:out)")
    add_model_arguments(p)
    p.set_defaults(run=run)


def _text(table: QKTable, q_token: str, k_token: str, top: int) -> str:
    terms = ", ".join(f"{k} {v:+.4f}" for k, v in table.terms.items()) or "none"
    lines = [f"{table.head.label}  query {table.query + 1} {printable(q_token)!r}  key {table.key + 1} "
             f"{printable(k_token)!r}",
             f"score {table.score:+.4f} (the model's) = pairs {float(table.contributions.sum()):+.4f} + terms "
             f"({terms}); sum {table.total:+.4f}"]
    lines += [table.rules_line()] if table.rules_line() else []
    lines += ["", f"{'query part':<16} {'key part':<16} contribution"]
    lines += [f"{q:<16} {k:<16} {c:+.4f}" for q, k, c in table.pairs()[:top]]
    for side, shares in (("query", table.by_query_part()), ("key", table.by_key_part())):
        best = sorted(shares.items(), key=lambda kv: -abs(kv[1]))[:top]
        lines += ["", f"by {side} part: " + ", ".join(f"{n} {v:+.3f}" for n, v in best)]
    return "\n".join(lines)


def _feature_text(table: FeatureQKTable, q_token: str, k_token: str, top: int) -> str:
    terms = sorted(table.terms().items(), key=lambda kv: -abs(kv[1]))
    pairs = table.pairs()
    lines = [f"{table.table.head.label}  query {table.table.query + 1} {printable(q_token)!r}  key "
             f"{table.table.key + 1} {printable(k_token)!r}  (features of {table.query_site.label} x "
             f"{table.key_site.label})",
             f"score {table.score:+.4f} = feature pairs {sum(c for _, _, c in pairs):+.4f} + terms "
             f"{sum(v for _, v in terms):+.4f}; the error terms are {100 * table.error_share():.0f} % of |score|",
             "", f"{'query feature':>13} {'key feature':>11}  contribution"]
    lines += [f"{q:>13} {k:>11}  {c:+.4f}" for q, k, c in pairs[:top]]
    lines += ["", "terms: " + ", ".join(f"{n} {v:+.4f}" for n, v in terms)]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """`qk`: the table of pairs, or one JSON object."""
    try:
        head = Head.parse(args.head)
    except HeadError as exc:
        raise InputError(str(exc)) from None
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    if head.kind not in adapter.family.kinds:
        raise InputError(f"{adapter.name} has no {head.kind} heads (its heads: "
                         f"{', '.join(Head(k, 0, 0).label.split(':')[0] for k in adapter.family.kinds)})")
    try:
        parts = decode_parts(adapter, args.text, step=args.step)
        q_axis = adapter.family.axes[head.kind][0]
        if args.query is not None:
            query = args.query - 1
        elif args.step is not None and parts.decoder_tokens and q_axis != SOURCE:
            query = parts.step_row(args.step)
        else:
            raise InputError("--query I is needed (or --step S for a decoder query)")
        table = qk_attribution(parts.capture, head, query, args.key - 1)
        features = (feature_qk(parts.capture, head, query, args.key - 1, [load_dictionary(d) for d in args.dictionary])
                    if args.dictionary else None)
    except ResidualPathError as exc:
        raise InputError(str(exc)) from None
    if any(v <= HIDDEN or math.isinf(v) for v in table.terms.values()):
        window = f" (its sliding window of {table.window})" if table.window is not None else ""
        raise InputError(f"key {args.key} is hidden from query {query + 1} by the mask{window} (weight 0): there is "
                         "no score to take apart")
    q_tokens, k_tokens = parts.tokens(head.kind)
    q_token, k_token = q_tokens[query], k_tokens[table.key]
    if args.json:
        out = (table if features is None else features).as_dict()
        out.update(query_token=q_token, key_token=k_token)
        print(json.dumps(finite_json(out)))
    elif features is not None:
        print(_feature_text(features, q_token, k_token, args.top))
    else:
        print(_text(table, q_token, k_token, args.top))
    return 0
