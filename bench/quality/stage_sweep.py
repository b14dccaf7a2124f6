"""Steps to a clean picture for stage-recipe variants: each variant × seed trained under the stage rule, in
parallel processes (the step counts do not depend on the machine, so a wide machine finds a recipe fast; the
seconds come from `bench.quality.stage_demo` on the 2-core CPU).

A variant is a JSON object {"name": ..., "model": {...}, "train": {...}} of overrides over the task's stage recipe.
Prints (and appends to --out) one JSON line per run: steps to clean (or the cap), target tokens trained on, the
final check's exact match and best head alignment; then per variant the steps of each seed.

    PYTHONPATH=. .venv/bin/python -m bench.quality.stage_sweep variants.json [--seeds 0 1 2 3 4] [--workers 2]
        [--cap 2000]
"""
from __future__ import annotations

import argparse
import json
import os
from concurrent.futures import ProcessPoolExecutor, as_completed

import torch

from transformer.data import TaskSpec, make_task
from transformer.model import stage_configs
from transformer.train import CLEAN, StopWhenClean, Trainer


def _init(threads: int) -> None:
    torch.set_num_threads(threads)


def one(task_name: str, variant: dict, seed: int, cap: int) -> dict:
    """Train one variant and seed until clean or `cap` steps; what it took."""
    task = make_task(TaskSpec(name=task_name, seed=seed))
    model_cfg, train_cfg, rule = stage_configs(task_name, task.src_tokenizer.vocab_size,
                                               task.tgt_tokenizer.vocab_size, variant.get("model"),
                                               {"seed": seed, "max_steps": cap, "max_seconds": None,
                                                **variant.get("train", {})})
    rule_cb = StopWhenClean(rule)
    trainer = Trainer(task, model_cfg, train_cfg, callbacks=[rule_cb])
    reason = trainer.run()
    last = rule_cb.clean or rule_cb.last or {}
    aligned = last.get("alignment") or {}
    return {"name": variant["name"], "seed": seed, "clean": reason == CLEAN, "steps": trainer.step,
            "tokens": sum(h["tokens"] for h in trainer.history), "train_s": round(trainer.elapsed, 2),
            "exact_match": last.get("exact_match"), "alignment": aligned.get("best"), "checks": rule_cb.checks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", help="a JSON file: a list of variants")
    parser.add_argument("--task", default="reverse")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--cap", type=int, default=2000, help="steps at most per run")
    parser.add_argument("--out", default=None, help="append the JSON lines here too")
    args = parser.parse_args()
    with open(args.variants) as f:
        variants = json.load(f)
    rows: dict[str, list[dict]] = {v["name"]: [] for v in variants}
    with ProcessPoolExecutor(args.workers, initializer=_init, initargs=(args.threads,)) as pool:
        futures = [pool.submit(one, args.task, v, s, args.cap) for s in args.seeds for v in variants]
        for fut in as_completed(futures):
            row = fut.result()
            rows[row["name"]].append(row)
            line = json.dumps(row)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(line + "\n")
    for name, runs in rows.items():
        runs.sort(key=lambda r: r["seed"])
        steps = [r["steps"] if r["clean"] else f">{r['steps']}" for r in runs]
        print(f"{name}: steps {steps}, tokens/step {runs[0]['tokens'] / max(runs[0]['steps'], 1):.0f} "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
