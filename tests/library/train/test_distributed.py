"""Training on several processes (torchrun, DistributedDataParallel over gloo on CPU): same model, sharded data,
resumable checkpoints, and a job that stops as a whole when one process dies or its loss turns NaN."""
from __future__ import annotations

import math
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
import types
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.cli_main import in_process
from tests.helpers.same_weights import assert_same_weights
from transformer.data import BucketSampler, ShardedBucketSampler, TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import load_checkpoint, open_model
from transformer.train import (
    DistEnv,
    DistributedTrainer,
    NonFiniteLossError,
    start_process_group,
    stop_process_group,
    threads_per_rank,
    torchrun_env,
    trainer_from_checkpoint,
)
from ui.shell import free_port

pytestmark = pytest.mark.slow

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
TINY = ["--task", "reverse", "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--d-model", "32",
        "--heads", "2", "--enc-layers", "1", "--dec-layers", "1", "--d-ff", "32", "--dropout", "0",
        "--label-smoothing", "0.1", "--eval-every", "1000", "--seed", "3", "--device", "cpu"]  # gloo, as the tests say
STEPS, PER_RANK = 6, 8


def torchrun(*args: str, nproc: int = 2) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            "-m", "transformer", *args]


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=False, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


def train_here(*args: str) -> str:
    """`python -m transformer train ARGS` as one process, run in this one on one thread (a rank's share of two
    cores); returns what it wrote on stderr. The reference runs' process start is not what these tests check."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = in_process("train", *args)
    finally:
        torch.set_num_threads(threads)
    assert result.returncode == 0, result.stderr
    return result.stderr


def two_ranks(*args: str) -> list[subprocess.CompletedProcess]:
    """`python -m transformer ARGS` as the two processes of one job, each started with the environment torchrun
    gives its ranks (its launcher is the fixture's and the kill test's to check)."""
    rendezvous = {**ENV, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2",
                  "LOCAL_WORLD_SIZE": "2"}
    procs = [subprocess.Popen([sys.executable, "-m", "transformer", *args], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env={**rendezvous, "RANK": str(rank), "LOCAL_RANK": str(rank)}) for rank in range(2)]
    try:
        outputs = [p.communicate(timeout=300) for p in procs]
        return [subprocess.CompletedProcess(p.args, p.returncode, *out) for p, out in zip(procs, outputs, strict=True)]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same training as 2 processes x 8 examples (torchrun) and as 1 process x 16 examples."""
    root = tmp_path_factory.mktemp("ddp")
    two = run(torchrun("train", *TINY, "--steps", str(STEPS), "--batch-size", str(PER_RANK), "--out",
                       str(root / "two")))
    assert two.returncode == 0, two.stderr
    assert f"global batch {2 * PER_RANK} = {PER_RANK} per process x 2" in two.stderr
    assert two.stdout.count("saved ") == 1  # only rank 0 saves and reports
    train_here(*TINY, "--steps", str(STEPS), "--batch-size", str(2 * PER_RANK), "--out", str(root / "one"))
    return {"two": root / "two", "one": root / "one"}


def test_two_processes_train_the_same_model_as_one_process_with_the_global_batch(runs) -> None:
    two, one = load_checkpoint(runs["two"]), load_checkpoint(runs["one"])
    assert two.step == one.step == STEPS
    assert_same_weights(two.model, one.model)
    # the logged curves describe the whole global batch, not rank 0's half
    assert [r["tokens"] for r in two.history] == [r["tokens"] for r in one.history]
    for a, b in zip(two.history, one.history, strict=True):
        assert math.isclose(a["loss"], b["loss"], rel_tol=1e-5) and math.isclose(a["accuracy"], b["accuracy"])


def test_a_two_process_checkpoint_resumes_in_one_process_with_its_step_and_optimizer_state(runs) -> None:
    two, one = load_checkpoint(runs["two"]), load_checkpoint(runs["one"])
    states = zip(two.optimizer_state["state"].values(), one.optimizer_state["state"].values(), strict=True)
    for state_two, state_one in states:
        torch.testing.assert_close(state_two["exp_avg_sq"], state_one["exp_avg_sq"], atol=1e-7, rtol=1e-3)
    cfg = replace(two.train_config, batch_size=2 * PER_RANK, max_steps=STEPS + 3)
    resumed = [trainer_from_checkpoint(c, train_config=cfg) for c in (two, one)]
    assert [t.step for t in resumed] == [STEPS, STEPS]
    loaded = resumed[0].optimizer.state_dict()["state"]  # the 2-process moments themselves, not fresh ones
    assert loaded.keys() == two.optimizer_state["state"].keys()
    for index, saved in two.optimizer_state["state"].items():
        for key in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(torch.as_tensor(saved[key]), torch.as_tensor(loaded[index][key])), (index, key)
    for trainer in resumed:
        trainer.run()
    assert [t.step for t in resumed] == [STEPS + 3] * 2
    assert_same_weights(resumed[0].model, resumed[1].model)


def test_train_resume_continues_a_two_process_checkpoint_in_one_process(runs, tmp_path: Path) -> None:
    out = tmp_path / "resumed"
    stderr = train_here("--resume", str(runs["two"]), "--steps", str(STEPS + 2), "--batch-size", str(2 * PER_RANK),
                        "--out", str(out), "--device", "cpu")
    assert f"from step {STEPS} to {STEPS + 2}, batch {2 * PER_RANK} on cpu" in stderr
    ckpt = load_checkpoint(out)
    assert ckpt.step == STEPS + 2 and [r["step"] for r in ckpt.history] == list(range(1, STEPS + 3))


@pytest.mark.parametrize("architecture, kinds", [("decoder-only", ("self",)), ("encoder-only", ("encoder_self",))])
def test_the_one_stack_architectures_train_on_two_processes_as_on_one(tmp_path: Path, architecture: str,
                                                                       kinds: tuple[str, ...]) -> None:
    """Two processes train our decoder-only and encoder-only architectures too: the same weights as one process with
    the global batch (the encoder-only model's masks drawn per example, so each rank masks its share as one process
    does), and the checkpoint reopens as that family."""
    args = [*TINY, "--architecture", architecture, "--steps", str(STEPS)]
    for rank in two_ranks("train", *args, "--batch-size", str(PER_RANK), "--out", str(tmp_path / "two")):
        assert rank.returncode == 0, rank.stderr
    train_here(*args, "--batch-size", str(2 * PER_RANK), "--out", str(tmp_path / "one"))
    a, b = load_checkpoint(tmp_path / "two"), load_checkpoint(tmp_path / "one")
    assert a.model_config.architecture == b.model_config.architecture == architecture and a.step == STEPS
    assert_same_weights(a.model, b.model)
    assert open_model(str(tmp_path / "two")).family.kinds == kinds


def test_shards_are_disjoint_and_cover_every_epoch() -> None:
    rng = random.Random(0)
    src = [[5] * rng.randint(1, 9) for _ in range(103)]
    tgt = [[6] * rng.randint(1, 9) for _ in range(103)]
    world = 3
    ranks = [ShardedBucketSampler(src, tgt, 4, rank=r, world=world, seed=7, pool_batches=3) for r in range(world)]
    single = BucketSampler(src, tgt, 4 * world, seed=7, pool_batches=3)
    for _ in range(2):
        shares = [r.epoch() for r in ranks]
        reference = single.epoch()
        assert len({len(s) for s in shares}) == 1  # every rank takes part in every global step
        seen = [i for rank_batches in shares for batch in rank_batches for i in batch]
        assert sorted(seen) == list(range(103))  # disjoint (no repeats) and complete (nothing dropped)
        for step, global_batch in enumerate(reference):  # a global step holds exactly one process's batch
            assert sorted(i for s in shares for i in s[step]) == sorted(global_batch)


def test_a_rank_without_a_share_of_a_tiny_batch_gets_one_that_counts_for_nothing() -> None:
    src, tgt = [[5, 6]] * 7, [[7]] * 7  # 7 examples, global batch 6: the second global batch has one example
    batches = [iter(ShardedBucketSampler(src, tgt, 2, rank=r, world=3, seed=0)) for r in range(3)]
    tokens = [[next(b).n_target_tokens for _ in range(2)] for b in batches]
    assert sum(t for rank_tokens in tokens for t in rank_tokens) == 7 * 2  # each example's 2 targets, once
    assert sorted(rank_tokens[1] for rank_tokens in tokens) == [0, 0, 2]


def test_threads_split_the_cores_between_the_ranks_of_a_machine() -> None:
    assert [threads_per_rank(n, cores=8) for n in (1, 2, 3, 8, 16)] == [8, 4, 2, 1, 1]
    assert torchrun_env({}) is None and torchrun_env({"WORLD_SIZE": "1", "RANK": "0"}) is None
    assert torchrun_env({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}) == \
        DistEnv(rank=3, world=4, local_rank=1, local_world=2)


def _worker_pids(parent: int) -> dict[int, int]:
    """rank -> pid of the training processes below `parent` (Linux /proc)."""
    found, todo = {}, [parent]
    while todo:
        pid = todo.pop()
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        todo += [int(c) for c in children]
        rank = [e for e in environ if e.startswith(b"RANK=")]
        if rank and pid != parent:
            found[int(rank[0][5:])] = pid
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the worker processes through /proc")
def test_killing_one_rank_stops_the_job_and_leaves_the_last_checkpoint_loadable(tmp_path: Path) -> None:
    out = tmp_path / "run"
    job = subprocess.Popen(torchrun("train", *TINY, "--steps", "100000", "--batch-size", "8", "--save-every", "3",
                                    "--out", str(out)), cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (out / "config.json").exists() and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (out / "config.json").exists(), job.communicate(timeout=60)
        time.sleep(0.5)  # mid-run: rank 0 keeps saving every 3 steps
        os.kill(_worker_pids(job.pid)[1], signal.SIGKILL)
        _, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode != 0
    assert "SIGKILL" in stderr or "another training process stopped" in stderr, stderr[-2000:]  # names the cause
    ckpt = load_checkpoint(out)
    assert ckpt.step > 0 and ckpt.step % 3 == 0 and ckpt.optimizer_state is not None


def _nan_worker(rank: int, port: int, results: multiprocessing.Queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    env = DistEnv(rank, 2, rank, 2)
    start_process_group(env, timeout_s=60)
    try:
        task = make_task(TaskSpec(name="reverse", n_train=64, n_valid=4, min_len=3, max_len=6))
        model_cfg, train_cfg = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                               model_overrides=dict(d_model=16, n_heads=2, n_encoder_layers=1,
                                                                    n_decoder_layers=1, d_ff=16, dropout=0.0),
                                               train_overrides=dict(batch_size=8, max_steps=50, max_seconds=None,
                                                                    eval_every=1000))
        trainer = DistributedTrainer(task, model_cfg, train_cfg, env=env)
        trainer.run(max_steps=2)
        if rank == 1:  # this rank alone goes bad
            with torch.no_grad():
                next(trainer.model.parameters()).fill_(float("nan"))
        try:
            trainer.run()
            results.put((rank, "finished", trainer.step, True))
        except NonFiniteLossError:
            finite = all(bool(torch.isfinite(p).all()) for p in trainer.model.parameters())
            results.put((rank, "stopped", trainer.step, finite))
    finally:
        stop_process_group()


def test_a_nan_on_one_rank_stops_every_rank_at_the_same_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # A spawned child re-runs the parent's __main__ by path; after an AppTest in this process that is a page
    # script, so the children start from a bare __main__ instead (the worker is found by its module name).
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    port = free_port()
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=_nan_worker, args=(rank, port, results)) for rank in range(2)]
    for p in procs:
        p.start()
    try:
        outcome = sorted(results.get(timeout=180) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert [o[:3] for o in outcome] == [(0, "stopped", 2), (1, "stopped", 2)]
    assert outcome[0][3]  # rank 0 (the one that saves) kept finite weights
