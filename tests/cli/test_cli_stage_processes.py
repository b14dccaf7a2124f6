"""`train --task reverse --stage` from the command line runs the recipe's processes itself (no torchrun to type):
it says how many it ran, splits the recipe's batch between them, and stops clean with its checkpoint saved."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from transformer.model import STAGE_RECIPES
from transformer.train import available_cores

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_train_stage_runs_the_recipe_s_processes_itself(tmp_path):
    processes = min(STAGE_RECIPES["reverse"].processes, available_cores())
    cmd = [sys.executable, "-m", "transformer", "train", "--task", "reverse", "--stage", "--n-train", "200",
           "--n-valid", "20", "--steps", "2", "--d-model", "16", "--probe-frames", "0", "--device", "cpu",
           "--out", str(tmp_path / "rev")]
    done = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    if processes > 1:
        assert f"stage demo: training as {processes} processes" in done.stderr
        assert f"global batch 128 = {128 // processes} per process x {processes}" in done.stderr
    assert done.stdout.count("stage demo: the picture is not clean yet at step 2") == 1  # one report, rank 0's
    assert (tmp_path / "rev" / "config.json").is_file()


def test_a_resumed_or_gpu_stage_run_trains_in_this_process():
    from argparse import Namespace

    from transformer.cli.train_stage import stage_processes

    base = dict(stage=True, resume=None, task="reverse", device="cpu")
    assert stage_processes(Namespace(**base)) == min(STAGE_RECIPES["reverse"].processes, available_cores())
    assert stage_processes(Namespace(**{**base, "stage": False})) == 1
    assert stage_processes(Namespace(**{**base, "resume": "runs/x"})) == 1
    assert stage_processes(Namespace(**{**base, "device": "cuda"})) == 1
