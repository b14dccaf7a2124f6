"""`python -m transformer dictionary train MODEL --site SITE --features N [--corpus FILE] --out DIR`: a sparse
dictionary trained on the model's own activations at one site, written as a SAELens folder (docs/dictionaries.md).

Sites: `resid:L<l>` (the residual stream entering layer l, 1-based), `attn:<kind>:L<l>` (layer l's attention output
before W_O, SAELens's hook_z), and on an encoder-decoder `resid:enc:L<l>`, `resid:dec:L<l>`, `resid:enc:out`. The
texts: --corpus FILE (one sentence a line, .gz ok, source<TAB>reference for a parallel file), else our checkpoint's
task's own examples. `dictionary show DIR` prints a folder's site, size and report.

Under torchrun with several processes (gloo on the CPU) each process reads a contiguous share of the texts, the
gradients are summed over the processes at every step (each process takes the same step one process would take on
all the rows), and rank 0 alone prints and writes the folder (atomically).
"""
from __future__ import annotations

import argparse
import json
import sys

from ..decode import InputError
from ..dictionaries import (
    ACTIVATIONS,
    CORPUS_LINES,
    MAX_TOKENS,
    TRAINABLE,
    Dictionary,
    DictionaryError,
    Report,
    Site,
    TrainingTexts,
    TrainSettings,
    TrainStep,
    corpus_texts,
    job_rows,
    load_dictionary,
    place,
    save_dictionary,
    site_activations,
    task_texts,
    text_share,
    train_dictionary,
)
from ..store import finite_json, open_model
from ..train import DistEnv, start_process_group, stop_process_group, torchrun_env
from . import HELP
from .common import Commands, add_model_arguments, positive_int

ACTIONS = ("train", "show")


def register(commands: Commands) -> None:
    """Add `dictionary` and its flags."""
    p = commands.add_parser("dictionary", help=HELP["dictionary"],
                            description="Train a sparse autoencoder (a dictionary of features) on a model's own "
                            "activations at one site and write it as a SAELens folder (cfg.json + "
                            "sae_weights.safetensors), or show one.")
    p.add_argument("action", choices=ACTIONS, help="train: MODEL -> --out DIR; show: DIR")
    p.add_argument("dir", metavar="MODEL_OR_DIR", help="train: our checkpoint folder, a Hugging Face folder or a hub "
                   "id; show: a dictionary folder")
    p.add_argument("--site", metavar="SITE", help="resid:L<l>, attn:<enc|dec|cross|self>:L<l>, resid:enc:L<l>, "
                   "resid:dec:L<l> or resid:enc:out")
    p.add_argument("--features", type=positive_int, metavar="N", help="the dictionary's size (features)")
    p.add_argument("--out", metavar="DIR", help="where the folder is written (replaced atomically if it is one)")
    p.add_argument("--corpus", metavar="FILE", help="one sentence a line (.gz ok; source<TAB>reference lines) "
                   "(default: our checkpoint's task's examples)")
    p.add_argument("--corpus-cap", type=positive_int, default=CORPUS_LINES, metavar="N",
                   help=f"read at most N sentences (default {CORPUS_LINES:,})")
    p.add_argument("--max-tokens", type=positive_int, default=MAX_TOKENS, metavar="N",
                   help=f"activation rows kept at most (default {MAX_TOKENS:,}; under torchrun split evenly between "
                   "the processes)")
    p.add_argument("--activation", choices=TRAINABLE, default="topk", help="top-k (default) or ReLU with an L1 "
                   f"penalty (the studio reads {', '.join(ACTIVATIONS)})")
    p.add_argument("--k", type=positive_int, default=8, help="top-k: active features a token (default 8)")
    p.add_argument("--l1", type=float, default=3e-3, help="ReLU: the L1 penalty (default 3e-3)")
    p.add_argument("--steps", type=positive_int, default=2000, help="optimizer steps (default 2000)")
    p.add_argument("--batch-size", type=positive_int, default=1024, help="activation rows a step (default 1024)")
    p.add_argument("--lr", type=float, default=2e-3, help="Adam's learning rate (default 2e-3)")
    p.add_argument("--seed", type=int, default=0, help="the seed (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object (the report) instead of lines")
    add_model_arguments(p)
    p.set_defaults(run=run)


def _show(args: argparse.Namespace) -> int:
    dictionary = load_dictionary(args.dir)
    out = {"site": dictionary.site.label, "hook_name": dictionary.site.hook_name, "d_in": dictionary.d_in,
           "features": dictionary.n_features, "activation": dictionary.activation, "k": dictionary.k,
           "model": dictionary.model, "trained": dictionary.trained, "metrics": dictionary.metrics}
    if args.json:
        print(json.dumps(finite_json(out)))
    else:
        state = "" if dictionary.trained else " (untrained: no training report)"
        print(f"{args.dir}: {dictionary.n_features:,} {dictionary.activation} features at {dictionary.site.label} "
              f"({dictionary.site.hook_name}), {dictionary.d_in} wide{state}")
        for name, value in dictionary.metrics.items():
            print(f"  {name} {value:g}")
    return 0


def _progress(step: TrainStep) -> None:
    print(f"\rstep {step.step}/{step.steps}  explained variance {step.explained_variance:.3f}  L0 {step.l0:.1f}  "
          f"{step.seconds:.0f} s", end="", file=sys.stderr, flush=True)


def _read_and_train(args: argparse.Namespace, site: Site, settings: TrainSettings, env: DistEnv | None
                    ) -> tuple[TrainingTexts, Dictionary, Report]:
    """The site's activations (this process's share of the texts under torchrun) and the dictionary trained on them."""
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    where = place(site, adapter)
    texts = corpus_texts(args.corpus, args.corpus_cap) if args.corpus else task_texts(args.dir, args.corpus_cap)
    loud = not args.json and (env is None or env.is_main)
    if loud:
        print(f"reading {where.site.label} ({where.width} wide) over {texts.described}", file=sys.stderr)
    mine, cap = range(len(texts.texts)), args.max_tokens
    if env is not None:
        print_job = start_process_group(env)
        if loud:
            print(f"{print_job}: each reads its share of the texts", file=sys.stderr)
        mine, cap = text_share(len(texts.texts), env), -(-args.max_tokens // env.world)
    refs = None if texts.references is None else [texts.references[i] for i in mine]
    acts = site_activations(adapter, where, [texts.texts[i] for i in mine], refs, max_tokens=cap)
    shard = None if env is None else job_rows(len(acts), env)
    dictionary, report = train_dictionary(acts.values, site, settings, adapter.name,
                                          on_step=_progress if loud else None, shard=shard)
    return texts, dictionary, report


def _train(args: argparse.Namespace) -> int:
    if not args.site or not args.features or not args.out:
        raise InputError("dictionary train needs --site SITE, --features N and --out DIR")
    site = Site.parse(args.site)
    settings = TrainSettings(args.features, args.activation, args.k, args.l1, args.steps, args.batch_size, args.lr,
                             args.seed)
    settings.check()
    env = torchrun_env()
    try:
        texts, dictionary, report = _read_and_train(args, site, settings, env)
    finally:
        stop_process_group()
    if env is not None and not env.is_main:  # rank 0 writes and reports
        return 0
    save_dictionary(dictionary, args.out, {"dataset_path": texts.described, "context_size": None})
    if args.json:
        print(json.dumps(finite_json({"out": args.out, "site": site.label, "hook_name": site.hook_name,
                                      "features": dictionary.n_features, **report.as_metrics(),
                                      "dead_fraction": report.dead / dictionary.n_features,
                                      "seconds": report.seconds, "corpus": texts.described})))
    else:
        print(file=sys.stderr)
        print(f"{args.out}: {report.line(dictionary.n_features)}")
    return 0


def run(args: argparse.Namespace) -> int:
    """`dictionary train` or `dictionary show`."""
    try:
        return _train(args) if args.action == "train" else _show(args)
    except DictionaryError as exc:
        raise InputError(str(exc)) from None
