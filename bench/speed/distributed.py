"""Training tokens/s: 1 process x 2 threads vs 2 processes x 1 thread (torchrun, DDP over gloo), same global batch.

Both run `python -m transformer train` on the reversal case-study sizes (d_model 128, 1+1 layers, 4 heads,
ff 128, dropout 0.1) with a global batch of 256 (2 x 128 under torchrun) for the same number of steps; the rate is
the target tokens of all steps over the training seconds the checkpoint records (start-up and saving excluded).
The two layouts alternate, `repeats` times, so load on the machine hits both alike. Both train on the CPU
(`--device cpu`); where this process sees a GPU, the same training on 1 GPU (`--device cuda`, batch 256) is added.
Run: `PYTHONPATH=. .venv/bin/python -m bench.speed.distributed`.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from transformer.store import load_checkpoint
from transformer.train import cuda_devices

LONG = True  # torchrun trainings: needs both cores to itself

ROOT = Path(__file__).resolve().parents[2]
SIZES = ["--task", "reverse", "--n-train", "20000", "--n-valid", "20", "--eval-examples", "20", "--d-model", "128",
         "--heads", "4", "--enc-layers", "1", "--dec-layers", "1", "--d-ff", "128", "--dropout", "0.1",
         "--eval-every", "100000", "--no-optimizer"]


def tokens_per_second(processes: int, steps: int, out: Path, device: str = "cpu") -> float:
    """Run one training and read its rate back from the saved history."""
    per_rank = 256 // processes
    args = [*SIZES, "--steps", str(steps), "--batch-size", str(per_rank), "--out", str(out), "--force",
            "--device", device]
    if processes == 1:
        cmd = [sys.executable, "-m", "transformer", "train", *args]
        env = {**os.environ, "OMP_NUM_THREADS": "2"}
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
               "-m", "transformer", "train", *args]
        env = dict(os.environ)
    subprocess.run(cmd, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True,
                   timeout=600)
    ckpt = load_checkpoint(out, load_optimizer=False)
    return sum(r["tokens"] for r in ckpt.history) / ckpt.elapsed


def run(repeats: int = 3, steps: int = 40) -> dict:
    rates: dict[str, list[float]] = {"1 process x 2 threads": [], "2 processes x 1 thread": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            rates["1 process x 2 threads"].append(tokens_per_second(1, steps, Path(tmp) / "one"))
            rates["2 processes x 1 thread"].append(tokens_per_second(2, steps, Path(tmp) / "two"))
            if cuda_devices():
                rates.setdefault("1 GPU", []).append(tokens_per_second(1, steps, Path(tmp) / "gpu", "cuda"))
    medians = {k: round(statistics.median(v)) for k, v in rates.items()}
    return {"tokens_per_s": {k: [round(x) for x in v] for k, v in rates.items()}, "median": medians,
            "ratio_2proc_over_1proc": round(medians["2 processes x 1 thread"] / medians["1 process x 2 threads"], 2)}


if __name__ == "__main__":
    print(json.dumps(run()))
