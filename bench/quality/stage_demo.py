"""The stage demo (`train --task reverse|toy-en-de --stage`): five seeds per task, each trained until its picture
is clean (or the rule's time cap), then scored on 500 held-out examples.

Reports per seed: steps, training seconds and CPU seconds to the clean picture, exact match and the best
cross-attention head's alignment (the rule's check on 200 examples, and 500 afterwards), and the machine's load.
Targets: reversal ≥ 0.99 exact match with a head ≥ 0.9 aligned in ≤ 10 s, 4 of 5 seeds;
toy English→German a head ≥ 0.9 aligned in ≤ 30 s.

With `--processes N` (N > 1) each seed runs the command a speaker types, `torchrun --standalone --nproc-per-node N
-m transformer train --task T --stage --seed S` (DDP over gloo, the recipe's batch split between the processes), and
the steps and training seconds are read from its "stage demo:" line.

    PYTHONPATH=. .venv/bin/python -m bench.quality.stage_demo [reverse toy-en-de] [--seeds 0 1 2 3 4] [--threads N]
    PYTHONPATH=. .venv/bin/python -m bench.quality.stage_demo reverse --processes 2
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from transformer.data import TaskSpec, make_task
from transformer.model import stage_configs
from transformer.store import load_checkpoint
from transformer.train import CLEAN, StopWhenClean, Trainer, evaluate_model

TARGET_S = {"reverse": 10.0, "toy-en-de": 30.0}
ROOT = Path(__file__).resolve().parents[2]
NOTE = re.compile(r"stage demo: the picture is (not clean yet|clean) at step ([\d,]+) after ([\d.]+) s")


def run(task_name: str, seed: int, model_overrides: dict | None = None, train_overrides: dict | None = None) -> dict:
    """One stage run: train until clean (or the cap), then score on 500 held-out examples."""
    task = make_task(TaskSpec(name=task_name, seed=seed))
    model_cfg, train_cfg, rule = stage_configs(task_name, task.src_tokenizer.vocab_size,
                                               task.tgt_tokenizer.vocab_size, model_overrides,
                                               {"seed": seed, **(train_overrides or {})})
    rule_cb = StopWhenClean(rule)
    trainer = Trainer(task, model_cfg, train_cfg, callbacks=[rule_cb])
    wall, cpu = time.perf_counter(), time.process_time()
    reason = trainer.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    final = evaluate_model(trainer.model, task, n=500)
    aligned = final.get("alignment") or {}
    clean = reason == CLEAN
    return {"task": task_name, "seed": seed, "ended_by": reason, "steps": trainer.step,
            "train_s": round(trainer.elapsed, 2), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "checks": rule_cb.checks, "exact_match": final["exact_match"], "head": aligned.get("best_head"),
            "alignment": aligned.get("best"), "clean": clean,
            "in_target": clean and trainer.elapsed <= TARGET_S[task_name], "load": round(os.getloadavg()[0], 1)}


def run_processes(task_name: str, seed: int, processes: int) -> dict:
    """One stage run as the CLI does it under torchrun on `processes` processes, then scored on 500 examples."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
               "-m", "transformer", "train", "--task", task_name, "--stage", "--seed", str(seed), "--out", str(out)]
        wall = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.perf_counter() - wall
        note = NOTE.search(done.stdout)
        if done.returncode or note is None:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-2000:]}")
        model = load_checkpoint(out).model
    task = make_task(TaskSpec(name=task_name, seed=seed))
    final = evaluate_model(model, task, n=500)
    aligned = final.get("alignment") or {}
    clean, steps, seconds = note.group(1) == "clean", int(note.group(2).replace(",", "")), float(note.group(3))
    return {"task": task_name, "seed": seed, "processes": processes, "ended_by": "picture clean" if clean else "cap",
            "steps": steps, "train_s": seconds, "wall_s": round(wall, 2), "cpu_s": float("nan"),
            "exact_match": final["exact_match"], "head": aligned.get("best_head"), "alignment": aligned.get("best"),
            "clean": clean, "in_target": clean and seconds <= TARGET_S[task_name],
            "load": round(os.getloadavg()[0], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", default=["reverse", "toy-en-de"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--processes", type=int, default=1, help="train under torchrun on this many processes")
    parser.add_argument("--model", default="{}", help="JSON model overrides (for trying recipes)")
    parser.add_argument("--train", default="{}", help="JSON training overrides (for trying recipes)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    for task_name in args.tasks:
        rows = []
        for seed in args.seeds:
            rows.append(run(task_name, seed, json.loads(args.model), json.loads(args.train)) if args.processes <= 1
                        else run_processes(task_name, seed, args.processes))
            print(json.dumps(rows[-1]), flush=True)
        hits = sum(r["in_target"] for r in rows)
        clean = [r for r in rows if r["clean"]]
        by_cpu = sum(r["cpu_s"] <= TARGET_S[task_name] for r in clean)

        def listed(key: str, clean: list = clean) -> str:
            return ", ".join(f"{r[key]:g}" for r in clean) or "-"

        print(f"{task_name}: {len(clean)} of {len(rows)} seeds clean, {hits} within {TARGET_S[task_name]:g} s of "
              f"training, {by_cpu} within {TARGET_S[task_name]:g} CPU seconds; to clean: steps {listed('steps')}, "
              f"training s {listed('train_s')}, CPU s {listed('cpu_s')} (load {os.getloadavg()[0]:.1f}, "
              f"{torch.get_num_threads()} threads)", flush=True)


if __name__ == "__main__":
    main()
