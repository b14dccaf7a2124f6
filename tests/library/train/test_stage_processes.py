"""The stage demo on several processes: the recipe's batch split between them and rank 0's rule stopping every rank
when the picture is clean. `train --stage` under torchrun (the command `train --stage` launches itself) is
tests/cli/test_cli_stage_processes.py's."""
from __future__ import annotations

import multiprocessing
import os
import sys
import types

import pytest

from transformer.cli.train_stage import stage_hint
from transformer.data import TaskSpec, make_task
from transformer.model import STAGE_RECIPES, CleanRule, stage_configs
from transformer.train import CLEAN, DistEnv, DistributedTrainer, StopWhenClean, start_process_group, stop_process_group
from ui.shell import free_port

EASY = CleanRule(min_exact_match=0.0, min_alignment=0.0, check_every=2, gate_accuracy=0.0, eval_examples=5,
                 confirm_examples=5)


def test_the_recipe_s_batch_is_the_global_batch_split_between_the_processes():
    recipe = STAGE_RECIPES["reverse"]
    assert recipe.processes == 2
    one, two = (stage_configs("reverse", 29, 29, processes=n)[1] for n in (1, 2))
    assert one.batch_size == recipe.train["batch_size"] == 2 * two.batch_size
    assert stage_configs("reverse", 29, 29, train_overrides={"batch_size": 8}, processes=2)[1].batch_size == 8


def test_one_process_on_two_cores_is_told_the_faster_command_and_no_one_else_is():
    hint = stage_hint("reverse", 1, 2)
    assert hint is not None and "torchrun --standalone --nproc-per-node 2 -m transformer train --task reverse" in hint
    assert stage_hint("reverse", 2, 2) is None  # already two processes
    assert stage_hint("reverse", 1, 1) is None  # one core: one process is the fastest
    assert stage_hint("toy-en-de", 1, 2) is None  # its recipe trains in one process


def _rank(rank: int, port: int, results: multiprocessing.Queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    start_process_group(DistEnv(rank, 2, rank, 2), timeout_s=60)
    try:
        task = make_task(TaskSpec(name="reverse", n_train=200, n_valid=20))
        model_cfg, train_cfg, _ = stage_configs("reverse", task.src_tokenizer.vocab_size,
                                                task.tgt_tokenizer.vocab_size, dict(d_model=16, d_ff=32),
                                                dict(batch_size=4, max_steps=50, max_seconds=None), processes=2)
        trainer = DistributedTrainer(task, model_cfg, train_cfg, env=DistEnv(rank, 2, rank, 2),
                                     callbacks=[StopWhenClean(EASY)] if rank == 0 else [])
        results.put((rank, trainer.run(), trainer.step))
    finally:
        stop_process_group()


@pytest.mark.slow
def test_rank_0_s_clean_picture_stops_every_rank_at_the_same_step(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # spawned children: a bare __main__
    port = free_port()
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(rank, port, results)) for rank in range(2)]
    for p in procs:
        p.start()
    try:
        outcome = sorted(results.get(timeout=180) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert outcome == [(0, CLEAN, EASY.check_every), (1, CLEAN, EASY.check_every)]
