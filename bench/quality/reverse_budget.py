"""Reversal (lengths 10-19) with the default `reverse` settings: greedy exact-match on 500 held-out strings
after at most 15 s of training on this machine."""
from __future__ import annotations

import torch

from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.train import Trainer, evaluate_model

LONG = False  # 15 s of training a seed

BUDGET_S = 15.0


def run(seed: int = 0) -> dict:
    task = make_task(TaskSpec(name="reverse", seed=seed))
    model_cfg, train_cfg = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           train_overrides=dict(seed=seed, max_seconds=BUDGET_S,
                                                                eval_every=10**6))
    trainer = Trainer(task, model_cfg, train_cfg)
    reason = trainer.run()
    metrics = evaluate_model(trainer.model, task, n=500)
    return {"seed": seed, "steps": trainer.step, "train_seconds": round(trainer.elapsed, 2), "ended_by": reason,
            "exact_match": metrics["exact_match"], "token_accuracy": round(metrics["token_accuracy"], 4),
            "alignment": metrics.get("alignment")}


if __name__ == "__main__":
    torch.set_num_threads(2)
    for seed in (0, 1, 2):
        print(run(seed))
