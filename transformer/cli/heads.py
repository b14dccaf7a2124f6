"""`python -m transformer heads MODEL`: which heads matter (the ablation sweep) and whether attention agrees with
attribution; with --corpus FILE, every head's statistics over a corpus instead (`heads_corpus.py`).

MODEL is one of our checkpoints, a Hugging Face folder or a hub id (as for `decode`). One input (TEXT), one input a
line (--file), or a checkpoint's validation examples (--valid N): with several inputs the figures are averaged, and
tasks with gold alignments also report the best-aligned head.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ..adapters import DEFAULT_MAX_PARAMS, InspectableModel
from ..analysis import (
    IG_STEPS,
    METHOD_TITLES,
    METHODS,
    Detection,
    HeadError,
    HeadReport,
    average_agreement,
    average_drops,
    detect_heads,
    estimate_agreement,
    estimate_head_effects,
    evaluate_alignment,
    head_report,
    output_ids,
    report_dict,
    summarize,
)
from ..data import CorpusError, read_corpus
from ..decode import InputError
from ..store import finite_json, load_checkpoint, open_model, task_for_checkpoint
from . import HELP
from .common import Commands, positive_int
from .heads_corpus import add_corpus_arguments, run_corpus
from .heads_long_range import add_long_range_arguments, run_long_range

MAX_FILE_LINES = 10_000


def register(commands: Commands) -> None:
    """Add `heads` and its flags."""
    p = commands.add_parser("heads", help=HELP["heads"],
                            description="Switch each head off in turn and rank the heads by how much the output's "
                            "log-probability drops, and compare attention with attribution (one input, --file or "
                            "--valid, averaged); or, with --corpus FILE, every head's attention statistics over a "
                            "corpus (--snapshots: over a run's weight snapshots; --sweep: the ablation sweep over "
                            "its sentences).")
    p.add_argument("dir", metavar="MODEL", help="our checkpoint folder, a Hugging Face folder or a hub id")
    p.add_argument("text", metavar="TEXT", nargs="?", help="the input (or use --file, --valid or --corpus)")
    p.add_argument("--file", metavar="PATH", help="inputs one a line; the figures are averaged")
    p.add_argument("--valid", type=positive_int, metavar="N", help="the checkpoint's first N validation inputs")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-agreement", action="store_true", help="skip attribution (only the ablation sweep)")
    p.add_argument("--attribution", choices=METHODS, default="integrated_gradients",
                   help="what attention is compared with: integrated_gradients (thorough; --ig-steps passes per output "
                   "step) or gradient_x_input (one pass per step)")
    p.add_argument("--ig-steps", type=positive_int, default=IG_STEPS, metavar="N", help="Integrated Gradients points")
    p.add_argument("--bf16", action="store_true", help="run the sweep in bfloat16 (faster where the CPU has it; "
                   "drops within 0.05 nats per output token + 5%% of float32's)")
    p.add_argument("--estimate", action="store_true", help="also the one-pass first-order estimate of every head's "
                   "drop (attribution patching) and its Spearman correlation with the exact drops; with --corpus "
                   "(statistics): the estimate averaged over the corpus's first --estimate-sentences sentences")
    add_corpus_arguments(p)
    add_long_range_arguments(p)
    p.add_argument("--prefix", default="", metavar="P", help="text put before every input (T5 task prefixes)")
    p.add_argument("--max-params", type=positive_int, default=DEFAULT_MAX_PARAMS, metavar="N",
                   help="refuse Hugging Face models with more parameters")
    p.add_argument("--chat", action="store_true",
                   help="decoder-only models: format each input with the tokenizer's chat template")
    p.set_defaults(run=run)


def _inputs(args: argparse.Namespace, adapter: InspectableModel) -> tuple[list[str], str]:
    given = [x for x in (args.text is not None, args.file is not None, args.valid is not None, bool(args.corpus))
             if x]
    if len(given) != 1:
        raise HeadError("give exactly one of TEXT, --corpus FILE (--sweep), --file PATH or --valid N "
                        "(or --long-range, which needs none)")
    if args.text is not None:
        return [args.text], "text"
    if args.corpus:  # --corpus FILE --sweep: the corpus's sentences, read as the statistics read them
        try:
            return list(read_corpus(args.corpus, cap=args.corpus_cap).sources), "file"
        except CorpusError as exc:
            raise InputError(str(exc)) from None
    if args.file is not None:
        lines = [line.strip() for line in Path(args.file).read_text(encoding="utf-8").splitlines() if line.strip()]
        if not lines:
            raise InputError(f"{args.file}: no input lines")
        return lines[:MAX_FILE_LINES], "file"
    if adapter.source != "checkpoint":
        raise HeadError("--valid needs one of our checkpoints (it reads the task's validation inputs); "
                         "give TEXT or --file PATH for a Hugging Face model")
    task = task_for_checkpoint(load_checkpoint(args.dir, load_optimizer=False))
    return [e.source for e in task.valid[: args.valid]], "valid"


def run(args: argparse.Namespace) -> int:
    """`heads`: the ranked ablation drops and the agreement figures, as a table or one JSON object."""
    if args.sweep and not args.corpus:
        raise HeadError("--sweep goes with --corpus FILE (the sentences to sweep)")
    if args.sweep and args.snapshots:
        raise HeadError("--snapshots gives the statistics over a run's snapshots; not with --sweep")
    if args.long_range:
        if args.text is not None or args.file is not None or args.valid is not None or args.corpus:
            raise HeadError("--long-range needs no input: give it without TEXT, --corpus, --file or --valid")
        return run_long_range(args, detectors_dict)
    if args.corpus and not args.sweep:
        return run_corpus(args)
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    texts, source = _inputs(args, adapter)
    start = time.perf_counter()
    reports, skipped = [], []
    dtype = torch.bfloat16 if args.bf16 else None
    for i, text in enumerate(texts):
        try:
            reports.append(head_report(adapter, text, agreement=not args.no_agreement, ig_steps=args.ig_steps,
                                       method=args.attribution, dtype=dtype))
        except InputError as exc:
            if len(texts) == 1:
                raise
            skipped.append({"line": i + 1, "error": str(exc)})
    if not reports:
        raise InputError("none of the inputs could be decoded")
    drops = average_drops([r.sweep for r in reports])
    agreement = None if args.no_agreement else average_agreement([r.agreement for r in reports])
    out: dict[str, Any] = {"checkpoint": str(args.dir), "model": adapter.name, "inputs": len(reports),
                           "skipped": skipped,
                           **({"text": texts[0], "output": reports[0].result.output_text,
                               "base_log_prob": round(reports[0].sweep.base_log_prob, 6)} if source == "text" else {}),
                           **report_dict(drops, agreement, args.attribution),
                           "detectors": detectors_dict(detect_heads(adapter)),
                           "seconds": round(time.perf_counter() - start, 3)}
    if args.estimate:
        out["estimate"] = _estimates(adapter, reports)
    if source == "valid":  # our checkpoint (_inputs refused --valid for other models): the network adapter wraps
        ckpt = load_checkpoint(args.dir, load_optimizer=False)
        task = task_for_checkpoint(ckpt)
        aligned = evaluate_alignment(ckpt.model, task.valid[: args.valid], ckpt.src_tokenizer, ckpt.tgt_tokenizer)
        if aligned is not None:
            out["alignment"] = {**summarize(aligned[0]), "best_head": f"cross:{summarize(aligned[0])['best_head']}"}
    if args.json:
        print(json.dumps(finite_json(out)))
        return 0
    print(f"{len(reports)} input(s); drop in log p(output) when a head is switched off (largest first):")
    for row in out["heads"]:
        print(f"  {row['label']:<14} {row['drop']:>10.4f}")
    if agreement is not None:
        best = out["agreement"]["best"]
        print(f"attention agrees best with {METHOD_TITLES[args.attribution]} at {best['best_head']}: "
              f"Spearman {best['spearman']:.3f}, top-1 match {best['top1']:.3f}")
        if "decoder_self" in out["agreement"]:
            best = out["agreement"]["decoder_self"]["best"]
            print(f"decoder self-attention agrees best with the attribution to the decoder inputs at "
                  f"{best['best_head']}: Spearman {best['spearman']:.3f}, top-1 match {best['top1']:.3f}")
    for name in ("previous_token", "induction"):
        best = out["detectors"]["best"][name]
        print(f"strongest {name.replace('_', '-')} head: {best['label']} (score {best['score']:.3f})")
    if skipped:
        print(f"warning: {len(skipped)} input(s) skipped (cannot be decoded)", file=sys.stderr)
    return 0


def _estimates(adapter: InspectableModel, reports: list[HeadReport]) -> dict[str, Any]:
    """The "estimate" block: per head the mean estimated drop, and the mean Spearman vs the exact sweep."""
    frames, rhos = [], []
    for report in reports:
        frame = estimate_head_effects(adapter, report.result.source_text, output_ids(report.result))
        frames.append(frame)
        rhos.append(estimate_agreement(frame, report.sweep.frame))
    mean = (frames[0] if len(frames) == 1 else
            pd.concat(frames).groupby(["kind", "layer", "head", "label"], as_index=False)["estimate"]
            .mean().sort_values("estimate", ascending=False))
    return {"method": "attribution patching (gradient x activation at each head's output)",
            "spearman_vs_exact": round(sum(rhos) / len(rhos), 4),
            "heads": [{"label": r.label, "estimate": round(float(r.estimate), 6)} for r in mean.itertuples()]}


def detectors_dict(found: Detection) -> dict[str, Any]:
    """The `detectors` block of `heads`: previous-token and induction score per head of the causal self-attention."""
    code = "self" if found.kind == "self" else "dec"
    heads = found.frame[found.frame["head"] >= 0]
    rows = [{"label": f"{code}:{r.label}", "previous_token": round(float(r.previous_token), 4),
             "induction": round(float(r.induction), 4)} for r in heads.itertuples()]
    best = {name: {"label": f"{code}:{heads.loc[heads[name].idxmax(), 'label']}",
                   "score": round(float(heads[name].max()), 4)} for name in ("previous_token", "induction")}
    return {"kind": found.kind, "induction_sequence": "random tokens repeated twice, "
            f"{found.per_copy} per copy", "heads": rows, "best": best}

