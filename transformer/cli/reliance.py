"""`python -m transformer reliance MODEL TEXT [--json]` and `--corpus FILE`: at each decode step of an encoder-decoder,
how much of the update came from the source (cross-attention) and how much from the prefix (decoder self-attention);
detached steps and omitted source tokens; over a corpus, the sentences ranked (`transformer.analysis.why.reliance`)."""
from __future__ import annotations

import argparse
import json
import sys

from ..analysis import rank_corpus, text_reliance
from ..data import CorpusError, read_corpus
from ..decode import InputError
from ..store import finite_json, open_model
from . import HELP
from .common import Commands, UsageError, add_model_arguments, positive_int, printable


def register(commands: Commands) -> None:
    """Add `reliance` and its flags."""
    p = commands.add_parser("reliance", help=HELP["reliance"],
                            description="Decode TEXT greedily and say, per step, which share of what the decoder's "
                            "attention wrote came through cross-attention (the source) and which through decoder "
                            "self-attention (the prefix); flag steps whose cross-attention collapsed onto </s> "
                            "(detached) and source tokens no step attended to (omitted). With --corpus FILE (one "
                            "sentence a line), rank the sentences by how detached their cross-attention is. "
                            "Encoder-decoder models only; docs/why-it-looks-there.md has the formulas.")
    p.add_argument("dir", metavar="MODEL", help="a checkpoint folder, a Hugging Face folder or hub id")
    p.add_argument("text", nargs="?", help="the source sentence (not with --corpus)")
    p.add_argument("--corpus", metavar="FILE", help="one source sentence a line (plain text or .gz): rank them")
    p.add_argument("--corpus-cap", type=positive_int, default=200, metavar="N",
                   help="read at most N sentences of --corpus (default 200)")
    p.add_argument("--max-steps", type=positive_int, metavar="N", help="stop each decode after N steps")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_model_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """`reliance`: one sentence's steps, or a corpus ranked."""
    if (args.text is None) == (args.corpus is None):
        raise UsageError("give TEXT or --corpus FILE (one of the two)")
    corpus = None
    if args.corpus is not None:
        try:
            corpus = read_corpus(args.corpus, cap=args.corpus_cap)
        except CorpusError as exc:
            raise InputError(str(exc)) from None
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    if corpus is not None:
        print(f"reading {corpus.describe()}", file=sys.stderr)
        rows = rank_corpus(adapter, corpus.sources, args.max_steps)
        if args.json:
            print(json.dumps(finite_json({"model": adapter.name, "corpus": args.corpus, "sentences": rows})))
            return 0
        print(f"{'line':>5} {'W1-unif':>7} {'source':>6} {'detached':>8}  output <- source")
        for row in rows:
            if "error" in row:
                print(f"{row['line']:>5} {'-':>7} {'-':>6} {'-':>8}  error: {row['error']}")
                continue
            print(f"{row['line']:>5} {row['wass_to_unif']:>7.3f} {row['source_share']:>6.2f} {row['detached']:>8}  "
                  f"{row['output']} <- {row['source']}")
        return 0
    found = text_reliance(adapter, args.text, args.max_steps)
    if args.json:
        print(json.dumps(finite_json(found.to_dict())))
        return 0
    print(f"{adapter.name}: {found.output}")
    print(f"source share {found.source_share:.2f} (mean of steps); cross-attention's distance to uniform "
          f"{found.wass_to_unif:.3f}")
    print(f"{'step':>4} {'token':<14} {'source':>6} {'prefix':>6} {'W1-unif':>7} {'on </s>':>7}")
    for s in found.steps:
        flag = "  detached" if s.detached else ""
        print(f"{s.step:>4} {printable(s.token):<14} {s.source:>6.2f} {s.prefix:>6.2f} {s.to_uniform:>7.3f} "
              f"{s.special_mass:>7.2f}{flag}")
    if found.omitted:
        tokens = ", ".join(f"{printable(found.source_tokens[p - 1])} ({p})" for p in found.omitted)
        print(f"omitted source tokens (no step attends to them most): {tokens}")
    return 0
