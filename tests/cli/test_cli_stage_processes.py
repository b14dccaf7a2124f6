"""`train --task reverse --stage` from the command line runs the recipe's processes itself (no torchrun to type):
it says how many it ran, splits the recipe's batch between them, and stops clean with its checkpoint saved."""
from __future__ import annotations

import pytest

from transformer.cli import main
from transformer.model import STAGE_RECIPES
from transformer.train import available_cores


@pytest.mark.slow
def test_train_stage_runs_the_recipe_s_processes_itself(tmp_path, monkeypatch, capfd):
    """`main` in this process (as `python -m transformer` runs it) launches `torchrun --standalone -m transformer
    train ... --stage`, the command a user would type: two processes on any machine (the cores are said to be two),
    the recipe's global batch split between them, one report (rank 0's) and one checkpoint."""
    monkeypatch.setattr("transformer.cli.train_stage.available_cores", lambda: 2)
    assert STAGE_RECIPES["reverse"].processes == 2
    code = main(["train", "--task", "reverse", "--stage", "--n-train", "200", "--n-valid", "20", "--steps", "2",
                 "--d-model", "16", "--probe-frames", "0", "--device", "cpu", "--out", str(tmp_path / "rev")])
    out, err = capfd.readouterr()  # this process's and its children's (the ranks write to the same descriptors)
    assert code == 0, err[-2000:]
    assert "stage demo: training as 2 processes" in err
    assert "global batch 128 = 64 per process x 2" in err
    assert out.count("stage demo: the picture is not clean yet at step 2") == 1  # one report, rank 0's
    assert (tmp_path / "rev" / "config.json").is_file()


def test_a_resumed_or_gpu_stage_run_trains_in_this_process():
    from argparse import Namespace

    from transformer.cli.train_stage import stage_processes

    base = dict(stage=True, resume=None, task="reverse", device="cpu")
    assert stage_processes(Namespace(**base)) == min(STAGE_RECIPES["reverse"].processes, available_cores())
    assert stage_processes(Namespace(**{**base, "stage": False})) == 1
    assert stage_processes(Namespace(**{**base, "resume": "runs/x"})) == 1
    assert stage_processes(Namespace(**{**base, "device": "cuda"})) == 1
