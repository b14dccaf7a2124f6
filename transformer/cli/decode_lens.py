"""`decode --lens` and `decode --encoder-layer N`: what each decoder layer would predict at each step (the logit
lens, `transformer.analysis.why.lens`), printed on stderr and written into the trace JSON's "lens" entry; and the
DecoderLens, the decoder reading an earlier encoder layer (docs/lens-and-beams.md)."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..adapters import InspectableModel
from ..analysis import LENS_TOP_K, MAX_LENS_TOP_K, StepLens, every_step_lens, layer_label, lens_dict
from ..decode import DecodeResult
from .common import non_negative_int, positive_int, printable


def add_lens_arguments(dec: argparse.ArgumentParser) -> None:
    """The decode command's lens flags."""
    dec.add_argument("--lens", action="store_true",
                     help="the logit lens: print what each decoder layer predicts at each step (stderr) and add it "
                          "to --trace-json")
    dec.add_argument("--lens-top-k", type=positive_int, default=LENS_TOP_K, metavar="K",
                     help=f"tokens per layer and step in the lens (default {LENS_TOP_K})")
    dec.add_argument("--encoder-layer", type=non_negative_int, metavar="N",
                     help="encoder-decoders: the decoder reads encoder layer N (0: the embeddings) instead of the "
                          "last (the DecoderLens)")


def lens_conflict(args: argparse.Namespace) -> str | None:
    """What is wrong with the lens flags beside the rest of the command, or None."""
    if args.reference is not None and args.encoder_layer is not None:
        return "--encoder-layer works with greedy decoding, not with --reference"
    if args.lens_top_k > MAX_LENS_TOP_K:
        return f"--lens-top-k shows at most {MAX_LENS_TOP_K} tokens per layer, not {args.lens_top_k}"
    return None


def _line(p: Any, width: int) -> str:
    top = "  ".join(f"{printable(t)} {v:.3f}" for t, v in p.top_k)
    return (f"  {layer_label(p.layer):<{width}}  rank {p.rank:>6}  p {p.prob:.3f}  H {p.entropy:5.2f}  "
            f"KL {p.kl:5.2f}   top: {top}")


def print_lens(lenses: tuple[StepLens, ...]) -> None:
    """Each step's layers on stderr: the chosen token's rank and probability, entropy, KL(final || layer) in nats,
    the layer's top tokens."""
    width = max(len(layer_label(p.layer)) for p in lenses[0].layers) if lenses else 0
    for s in lenses:
        print(f"lens, step {s.step + 1}: {printable(s.token)}  ({s.n_emittable:,} emittable tokens)", file=sys.stderr)
        for p in s.layers:
            print(_line(p, width), file=sys.stderr)


def lens_entry(adapter: InspectableModel, result: DecodeResult, args: argparse.Namespace) -> dict[str, Any]:
    """With --lens: print the lens and return the trace JSON's {"lens": ...}; otherwise {}."""
    if not args.lens:
        return {}
    lenses = every_step_lens(adapter, result, k=args.lens_top_k)
    print_lens(lenses)
    return {"lens": lens_dict(lenses, result.encoder_layer)}
