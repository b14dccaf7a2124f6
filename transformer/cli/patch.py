"""`python -m transformer patch MODEL CLEAN CORRUPTED`: activation patching (docs/patching.md).

Copies one activation at a time from the clean input's run into the corrupted input's run, both fed the clean output
up to the target step, and prints how much of the clean answer each copy brings back: by source position (the
encoder output), by head and by layer x position (the residual stream); a table, or one JSON object with --json.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from ..adapters import DEFAULT_MAX_PARAMS
from ..analysis import (
    ENCODER_OUTPUT,
    HEAD_POSITIONS,
    HEADS,
    RESIDUAL_STREAM,
    PatchingResult,
    patch_sites,
    patching_agreement,
    prepare_patching,
    preview_patching,
)
from ..decode import InputError
from ..store import finite_json, open_model
from . import HELP
from .common import Commands, positive_int, printable

SITE_NAMES = {"encoder": ENCODER_OUTPUT, "heads": HEADS, "residual": RESIDUAL_STREAM,
              "heads-per-position": HEAD_POSITIONS}


def register(commands: Commands) -> None:
    """Add `patch` and its flags."""
    p = commands.add_parser("patch", help=HELP["patch"],
                            description="Copy one activation at a time (encoder output per source position, heads, "
                            "residual stream) from the clean input's run into the corrupted input's run and print "
                            "how much of the clean answer each copy brings back.")
    p.add_argument("dir", metavar="MODEL", help="our checkpoint folder, a Hugging Face folder or a hub id")
    p.add_argument("clean", metavar="CLEAN", help="the clean input")
    p.add_argument("corrupted", metavar="CORRUPTED", help="the edited (corrupted) input")
    p.add_argument("--step", type=positive_int, metavar="N", help="the clean output's token N (1-based) is the "
                   "target (default: the first step the edit changes)")
    p.add_argument("--contrast", metavar="TOKEN", help="metric: log p(clean token) - log p(TOKEN) (default: "
                   "log p(clean token))")
    p.add_argument("--sites", default="encoder,heads,residual", metavar="LIST",
                   help="what to patch, comma-separated: encoder (output per source position), heads, residual, "
                   "heads-per-position (each encoder head at each source position)")
    p.add_argument("--estimate", action="store_true", help="the one-pass gradient estimate of every site instead "
                   "(attribution patching), with the exact figures of its top ten and their Spearman correlation")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--prefix", default="", metavar="P", help="text put before every input (T5 task prefixes)")
    p.add_argument("--max-params", type=positive_int, default=DEFAULT_MAX_PARAMS, metavar="N",
                   help="refuse Hugging Face models with more parameters")
    p.add_argument("--chat", action="store_true",
                   help="decoder-only models: format each input with the tokenizer's chat template")
    p.set_defaults(run=run)


def _sites(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    wrong = [s for s in names if s not in SITE_NAMES]
    if wrong or not names:
        raise InputError(f"--sites: {', '.join(wrong) or 'nothing'} is not a site; use encoder, heads, residual, "
                         "heads-per-position")
    return [SITE_NAMES[s] for s in names]


def _rows(frame: pd.DataFrame, value: str) -> list[dict[str, Any]]:
    keep = ["site", "where", "layer", "head", "position", "token", value]
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
            for row in frame[[c for c in keep if c in frame]].to_dict("records")]


def run(args: argparse.Namespace) -> int:
    """`patch`: the recoveries (or raw differences when the edit barely moves the target) as a table or JSON."""
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    which = [s for s in _sites(args.sites) if s != ENCODER_OUTPUT or adapter.family.has_cross]
    setup = prepare_patching(adapter, args.clean, args.corrupted, step=None if args.step is None else args.step - 1,
                             contrast=args.contrast)
    value = "difference" if setup.barely else "recovery"
    out: dict[str, Any] = {"model": adapter.name, "clean": args.clean, "corrupted": args.corrupted,
                           "output": adapter.detokenize(setup.output)}
    if args.estimate:
        frame = preview_patching(adapter, setup, which)
        out.update(PatchingResult(frame, setup, 0.0).summary(), method="attribution patching (one forward and one "
                   "backward on the corrupted run), exact figures for the top ten",
                   spearman_vs_exact=patching_agreement(frame, frame), sites=_rows(frame, "estimate"),
                   exact=_rows(frame.dropna(subset=[value]), value))
    else:
        result = patch_sites(adapter, setup, which)
        frame = result.frame
        out.update(result.summary(), shows=value, sites=_rows(frame, value), seconds=round(result.seconds, 3))
    if args.json:
        print(json.dumps(finite_json(out)))
        return 0
    _print_table(out, frame, "estimate" if args.estimate else value, adapter)
    return 0


def _print_table(out: dict[str, Any], frame: pd.DataFrame, value: str, adapter: Any) -> None:
    print(f"{out['model']}: clean {out['clean']!r} -> {out['output']!r}; corrupted {out['corrupted']!r}")
    print(f"target: output token {out['step']} {adapter.id_to_token(out['token'])!r}; metric {out['metric']}: clean "
          f"{out['clean_metric']:.4f}, corrupted {out['corrupted_metric']:.4f}")
    if out["barely_moves"]:
        print("  the edit barely moves the target (under 0.1 nats): raw differences metric - corrupted, no ratio")
    for stack, positions in out["unaligned"].items():
        print(f"  unaligned {stack} positions, left unpatched: clean {positions['clean']}, "
              f"corrupted {positions['corrupted']}")
    what = {"recovery": "recovery", "difference": "difference", "estimate": "estimated difference"}[value]
    enc = frame[frame["site"] == ENCODER_OUTPUT]
    if len(enc):
        print(f"encoder output by source position ({what}):")
        for r in enc.itertuples():
            print(f"  {r.position:>3} {printable(str(r.token)):<16} {getattr(r, value):>9.4f}")
    heads = frame[frame["site"] == HEADS]
    for kind, part in heads.groupby("where", sort=False):
        grid = part.pivot(index="layer", columns="head", values=value)
        print(f"{kind} heads ({what}; rows layers, columns heads, 1-based):")
        for layer, row in grid.iterrows():
            print(f"  L{layer + 1:<3}" + "".join(f"{v:>9.3f}" for v in row))
    per_position = frame[frame["site"] == HEAD_POSITIONS]
    if len(per_position):
        grid = per_position.pivot_table(index=["layer", "head"], columns="position", values=value, dropna=False)
        print(f"encoder heads at each source position ({what}; rows layer and head, columns positions):")
        for (layer, head), row in grid.iterrows():
            print(f"  L{layer + 1}H{head + 1:<4}" + "".join(f"{v:>9.3f}" for v in row))
    resid = frame[frame["site"] == RESIDUAL_STREAM]
    for stack, part in resid.groupby("where", sort=False):
        grid = part.pivot(index="layer", columns="position", values=value)
        tokens = part.drop_duplicates("position").set_index("position")["token"]
        print(f"{stack} residual stream ({what}; rows: after layer i, 0 the embeddings; columns positions):")
        print("       " + "".join(f"{printable(str(tokens[p]))[:8]:>9}" for p in grid.columns))
        for layer, row in grid.iterrows():
            print(f"  {layer:<5}" + "".join(f"{v:>9.3f}" for v in row))

