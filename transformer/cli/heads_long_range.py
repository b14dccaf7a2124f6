"""`python -m transformer heads MODEL --long-range [--length N]`: detectors that need no input text
(docs/finding-heads.md): every head's pattern label from the last window of queries of synthetic inputs, and the
causal self-attention's retrieval score over needle-in-a-haystack inputs at several depths and two lengths, beside
the previous-token and induction scores of the `detectors` object.
"""
from __future__ import annotations

import argparse
import json
import time
from typing import Any

from ..analysis import LENGTH, detect_heads, long_range_dict, long_range_heads
from ..store import finite_json, open_model
from .common import positive_int


def add_long_range_arguments(p: Any) -> None:
    """The `heads` command's long-range flags."""
    p.add_argument("--long-range", action="store_true", help="no input text: every head's pattern label (local, "
                   "first-token sink, previous-token, induction, vertical, diagonal, anti-diagonal, retrieval) and the "
                   "causal heads' retrieval scores on needle-in-a-haystack inputs")
    p.add_argument("--length", type=positive_int, default=LENGTH, metavar="N",
                   help=f"--long-range: tokens of the longest synthetic input (default {LENGTH}; at most the model's)")


def run_long_range(args: argparse.Namespace, detectors_dict: Any) -> int:
    """`heads --long-range`: the pattern table (or the JSON with the extended `detectors` object)."""
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    start = time.perf_counter()
    found = long_range_heads(adapter, args.length)
    detectors = detectors_dict(detect_heads(adapter)) if adapter.family.decoder_kind is not None else {}
    detectors.update(long_range_dict(found))
    out = {"checkpoint": str(args.dir), "model": adapter.name, "length": found.length, "detectors": detectors,
           "seconds": round(time.perf_counter() - start, 3)}
    if args.json:
        print(json.dumps(finite_json(out)))
        return 0
    print(f"pattern of every head (the last {detectors['pattern']['window']} queries of synthetic inputs"
          f"{f', {found.length} tokens' if found.length else ''}):")
    for row in found.frame.itertuples():
        extra = "" if row.retrieval != row.retrieval else f"  retrieval {row.retrieval:.3f}"
        print(f"  {row.label:<14} {row.pattern:<17}{extra}")
    if "retrieval" in detectors:
        info = detectors["retrieval"]
        print(f"strongest retrieval head: {info['best']['label']} (score {info['best']['score']:.3f}; the model "
              f"copied {info['copy_rate']:.0%} of the needle tokens over {info['inputs']} inputs)")
    return 0
