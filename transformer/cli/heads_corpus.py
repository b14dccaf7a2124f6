"""`python -m transformer heads MODEL --corpus FILE`: every head's statistics over a corpus instead of the one-input
ablation sweep (docs/corpus-statistics.md): attention to the first token, specials and punctuation, to the same,
previous and next position, entropy, confidence, and the heads clustered by the Jensen-Shannon divergence of their
patterns. Under torchrun each process reads its share of the sentences and rank 0 prints the merged statistics.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, cast

from ..adapters import InspectableModel
from ..analysis import (
    CORPUS_STATISTICS,
    ESTIMATE_SENTENCES,
    CorpusStats,
    corpus_estimate,
    corpus_statistics,
    corpus_sums,
    merge_sums,
    snapshot_curves,
    stats_from_sums,
)
from ..data import MAX_CORPUS_LINES, CorpusError, known_alignment, read_corpus
from ..decode import InputError
from ..model import Head
from ..store import finite_json, is_checkpoint_folder, list_snapshots, load_checkpoint, open_model
from ..train import start_process_group, stop_process_group, torchrun_env
from .common import positive_int


def add_corpus_arguments(p: argparse.ArgumentParser) -> None:
    """The `heads` command's corpus flags."""
    p.add_argument("--corpus", metavar="FILE", help="per-head statistics over this corpus: one sentence a line "
                   "(.gz ok; source<TAB>reference lines for a parallel file) instead of the ablation sweep")
    p.add_argument("--corpus-reference", metavar="FILE", help="the corpus's references, line for line: the maps come "
                   "from teacher-forcing them (default: the model's own greedy output)")
    p.add_argument("--corpus-cap", type=positive_int, default=MAX_CORPUS_LINES, metavar="N",
                   help=f"read at most N sentences (default {MAX_CORPUS_LINES:,})")
    p.add_argument("--use-reference", action="store_true", help="a parallel corpus: teacher-force its references")
    p.add_argument("--sort", choices=tuple(CORPUS_STATISTICS), default="max_weight",
                   help="the table's order (default max_weight: the most confident heads first)")
    p.add_argument("--sweep", action="store_true", help="with --corpus: the per-sentence ablation and attribution "
                   "sweep averaged over the corpus's sentences (as --file does) instead of the statistics")
    p.add_argument("--estimate-sentences", type=positive_int, default=ESTIMATE_SENTENCES, metavar="N",
                   help=f"with --corpus --estimate: the one-pass ablation estimate averaged over the corpus's first N "
                   f"sentences (default {ESTIMATE_SENTENCES})")
    p.add_argument("--snapshots", action="store_true", help="DIR is a training run kept with train "
                   "--keep-snapshots N: the statistics over each weight snapshot, every head's curve over the steps "
                   "(the text table shows --sort's)")


def _gold(folder: str) -> Any:
    """Our checkpoint's task's gold alignment of a sentence (None where the task cannot know it)."""
    if not is_checkpoint_folder(Path(folder)):
        return None
    ckpt = load_checkpoint(folder, load_optimizer=False)
    name = str(ckpt.task_spec.get("name", ""))
    return lambda text: known_alignment(name, text, ckpt.src_tokenizer)


def _statistics(adapter: InspectableModel, sources: Any, references: Any, gold: Any, env: Any) -> CorpusStats | None:
    """One process's statistics, or under torchrun each process's share of the sentences (i % world == rank),
    their sums gathered and merged on rank 0 (None on the others)."""
    if env is None:
        return corpus_statistics(adapter, sources, references, gold=gold)
    import torch.distributed as dist
    start_process_group(env)
    try:
        part = corpus_sums(adapter, sources, references, shard=(env.rank, env.world), gold=gold)
        parts: list[Any] = [None] * env.world
        dist.all_gather_object(parts, part)  # between our own processes only
    finally:
        stop_process_group()
    return stats_from_sums(merge_sums(parts)) if env.is_main else None


def run_corpus(args: argparse.Namespace) -> int:
    """`heads --corpus`: the statistics table (or the corpus statistics JSON)."""
    try:
        corpus = read_corpus(args.corpus, args.corpus_reference, cap=args.corpus_cap)
    except CorpusError as exc:
        raise InputError(str(exc)) from None
    use_ref = corpus.references is not None and (args.use_reference or args.corpus_reference is not None)
    if getattr(args, "snapshots", False):
        if getattr(args, "estimate", False):
            raise InputError("--estimate over a corpus is the final model's: not with --snapshots")
        return _over_snapshots(args, corpus, use_ref)
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    if getattr(args, "estimate", False) and not adapter.family.decodes:
        raise InputError("--estimate: an encoder-only model writes no output to estimate against")
    env = torchrun_env()
    if env is None or env.is_main:
        print(f"reading {corpus.describe()}", file=sys.stderr)
    start = time.perf_counter()
    stats = _statistics(adapter, corpus.sources, corpus.references if use_ref else None, _gold(args.dir), env)
    seconds = time.perf_counter() - start
    if stats is None:  # another process than torchrun's first: rank 0 prints
        return 0
    for line in stats.skipped[:5]:
        print(f"warning: skipped {line}", file=sys.stderr)
    estimate = None
    if getattr(args, "estimate", False):  # the one-pass ablation estimate over the corpus's first N sentences
        estimate = corpus_estimate(adapter, corpus.sources, corpus.references if use_ref else None,
                                   n=args.estimate_sentences)
        seconds = time.perf_counter() - start
    if args.json:
        extra = {} if estimate is None else {"estimate": estimate.to_dict()}
        print(json.dumps(finite_json({"model": args.dir, "corpus": corpus.path, "read": corpus.describe(),
                                      "capped": corpus.capped, "seconds": round(seconds, 2), **stats.to_dict(),
                                      **extra})))
        return 0
    table = stats.ranked(args.sort)
    print(f"{stats.sentences:,} sentences ({stats.mode}), {seconds:.1f} s; heads by {args.sort}:")
    names = list(CORPUS_STATISTICS)
    by_label = {} if estimate is None else dict(zip(estimate.frame["label"], estimate.frame["estimate"], strict=True))
    if estimate is not None:
        print(f"estimate: the one-pass ablation estimate, {estimate.caption()}")
    print(f"{'head':<14}" + "".join(f"{n[:11]:>12}" for n in names) + ("    estimate" if by_label else ""))
    for row in table.itertuples():
        label = Head(row.kind, row.layer, row.head).label
        tail = f"{by_label[label]:>12.3f}" if label in by_label else ""
        print(f"{label:<14}" + "".join(f"{getattr(row, n):>12.3f}" for n in names) + tail)
    return 0


def _over_snapshots(args: argparse.Namespace, corpus: Any, use_ref: bool) -> int:
    """`heads RUN --corpus FILE --snapshots`: the statistics over each weight snapshot of a training run."""
    if torchrun_env() is not None:
        raise InputError("--snapshots runs in one process (not under torchrun)")
    snapshots = list_snapshots(args.dir)
    if not snapshots:
        raise InputError(f"{args.dir}: no weight snapshots (train with --keep-snapshots N keeps them in "
                         f"{Path(args.dir) / 'snapshots'})")
    print(f"reading {corpus.describe()} with {len(snapshots)} snapshots", file=sys.stderr)
    start = time.perf_counter()
    gold = _gold(str(snapshots[0][1]))
    stats = []
    for _step, folder in snapshots:
        adapter = open_model(str(folder))
        stats.append(corpus_statistics(adapter, corpus.sources, corpus.references if use_ref else None, gold=gold))
    seconds = time.perf_counter() - start
    curves = snapshot_curves([step for step, _ in snapshots], stats)
    if args.json:
        print(json.dumps(finite_json({"model": args.dir, "corpus": corpus.path, "read": corpus.describe(),
                                      "capped": corpus.capped, "seconds": round(seconds, 2), **curves})))
        return 0
    steps = cast(list[int], curves["steps"])
    print(f"{len(steps)} snapshots, {stats[-1].sentences:,} sentences ({stats[-1].mode}), {seconds:.1f} s; "
          f"{args.sort} per head at each step:")
    print(f"{'head':<14}" + "".join(f"{s:>10}" for s in steps))
    for head in cast(list[dict[str, Any]], curves["heads"]):
        label = Head(head["kind"], head["layer"], head["head"]).label
        print(f"{label:<14}" + "".join(f"{v:>10.3f}" for v in head[args.sort]))
    return 0
