"""`decode --temperature T --sample-top-k K --top-p P --seed S`: sampling inside the decode (`decode.Sampling`).
`--top-k` keeps meaning how many candidates each step records; temperature 0 is greedy. Bad values get one line
(the library's `check_sampling` messages)."""
from __future__ import annotations

import argparse
import sys

from ..decode import DecodeResult, Sampling


def add_sampling_arguments(dec: argparse.ArgumentParser) -> None:
    """The decode command's sampling flags."""
    dec.add_argument("--temperature", type=float, metavar="T",
                     help="sample each step at this temperature instead of decoding greedily (0: greedy; default 1 "
                          "when --sample-top-k or --top-p is given)")
    dec.add_argument("--sample-top-k", type=int, metavar="K", help="sample from the K most probable tokens only")
    dec.add_argument("--top-p", type=float, metavar="P",
                     help="sample from the smallest set of tokens whose probability reaches P (nucleus sampling)")
    dec.add_argument("--seed", type=int, metavar="S", help="the random seed of the sample (default 0): the same seed "
                     "gives the same tokens here, in the app and in the notebook")


def sampling_from(args: argparse.Namespace) -> Sampling | None:
    """The settings the flags ask for, or None (greedy) when no sampling flag is given."""
    if args.temperature is None and args.sample_top_k is None and args.top_p is None:
        return None
    return Sampling(temperature=1.0 if args.temperature is None else args.temperature,
                    top_k=0 if args.sample_top_k is None else args.sample_top_k,
                    top_p=1.0 if args.top_p is None else args.top_p, seed=0 if args.seed is None else args.seed)


def print_samples(result: DecodeResult) -> None:
    """With --verbose: where each sampled token ranked, and how many tokens survived the cut (stderr)."""
    for i, sample in enumerate(result.samples, start=1):
        if sample is not None:
            print(f"{i:>3}  drawn: rank {sample.rank} in the model's distribution, p {sample.prob_after:.3f} after "
                  f"filtering; {sample.kept:,} tokens kept", file=sys.stderr)
