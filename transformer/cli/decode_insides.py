"""`decode --internals HEAD` (one head's whole computation: queries, keys, values, scale, each additive term, dot
products, scores, weights, the head's output and its share after W_O) and `decode --contributions` (every head's
||α·W_O v|| map) into the trace JSON (docs/formats.md, docs/insides.md)."""
from __future__ import annotations

import argparse
from typing import Any

from ..adapters import InspectableModel
from ..analysis import HeadSelectionError, capture_decode, contributions_dict, internals_dict
from ..decode import DecodeResult
from ..model import Head, HeadError


def add_insides_arguments(dec: argparse.ArgumentParser) -> None:
    """The decode command's insides flags."""
    dec.add_argument("--internals", metavar="HEAD",
                     help="add one head's computation to --trace-json, e.g. cross:L1H2 (1-based; enc, dec, cross or "
                          "self): queries, keys, values, scale, masks and biases, scores, weights, output")
    dec.add_argument("--contributions", action="store_true",
                     help="add every head's contribution map ||α·W_O v|| (what each key adds) to --trace-json")


def insides_conflict(args: argparse.Namespace) -> str | None:
    """What is wrong with the insides flags beside the rest of the command, or None (checked before the model loads)."""
    if (args.internals or args.contributions) and not args.trace_json:
        return "--internals and --contributions are written into the trace JSON: add --trace-json PATH"
    if args.internals:
        try:
            Head.parse(args.internals)
        except HeadError as exc:
            return f"--internals: {exc}"
    return None


def insides_entry(adapter: InspectableModel, result: DecodeResult, args: argparse.Namespace) -> dict[str, Any]:
    """The trace JSON's "internals" and "contributions" entries asked for (none: {}); ValueError with the model's
    ranges for a head it has not got."""
    if not (args.internals or args.contributions):
        return {}
    head = Head.parse(args.internals) if args.internals else None
    if head is not None:
        _check_head(adapter, head, args.internals)  # before the capture: a head the model has not got costs no forward
    captured = capture_decode(adapter, result, args.reference)
    entry: dict[str, Any] = {}
    if head is not None:
        try:
            entry["internals"] = internals_dict(adapter, captured, head.kind, head.layer, head.head)
        except HeadSelectionError as exc:
            raise ValueError(f"--internals {args.internals}: {exc}") from None
    if args.contributions:
        entry["contributions"] = contributions_dict(adapter, captured)
    return entry


def _check_head(adapter: InspectableModel, head: Head, asked: str) -> None:
    """ValueError naming, as the flag numbers them (L1H1 first), the layers and heads the model has."""
    counts = adapter.head_counts()
    if head.kind not in counts:
        raise ValueError(f"--internals {asked}: no attention kind {head.kind!r} in {adapter.name}; it has "
                         f"{', '.join(counts)}")
    n_layers, n_heads = counts[head.kind]
    if not 0 <= head.layer < n_layers:
        raise ValueError(f"--internals {asked}: no layer L{head.layer + 1} in {head.kind}; it has L1-L{n_layers}")
    if not 0 <= head.head < n_heads:
        raise ValueError(f"--internals {asked}: no head H{head.head + 1} in {head.kind}; it has H1-H{n_heads}")
