"""What a budget-driven probe timeline costs: a 15-s reverse job recording ~20 probe frames vs one recording only
every 333 steps (the old cadence), alternated in the same run; steps/s ratio and frames recorded.

`python -m bench.app.run_frames` (uses the app's training processes, so run it with nothing else training)."""
from __future__ import annotations

import json

from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.train import JobPlan, TrainingJob

LONG = True  # trains with the app's training processes: nothing else may train

BUDGET_S = 15.0


def one(frames: int) -> dict:
    task = make_task(TaskSpec(name="reverse"))
    model_cfg, train_cfg = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           train_overrides=dict(max_seconds=None, eval_every=10**6))
    job = TrainingJob(JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, max_steps=10**6,
                              max_seconds=BUDGET_S, probe=task.probe, probe_every=333, probe_frames=frames,
                              threads=1)).start()
    job.join()
    snap = job.snapshot()
    return {"frames_wanted": frames, "steps": snap.step, "steps_per_s": round(snap.step / snap.run_seconds, 2),
            "frames": len(job.timeline())}


def run(rounds: int = 2) -> dict:
    results = {0: [], 20: []}
    for _ in range(rounds):
        for frames in (0, 20):
            results[frames].append(one(frames))
    rate = {f: sum(r["steps_per_s"] for r in rs) / len(rs) for f, rs in results.items()}
    return {"runs": results, "steps_per_s_ratio_20_frames_vs_old": round(rate[20] / rate[0], 3)}


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
