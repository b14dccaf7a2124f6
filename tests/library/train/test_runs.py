"""Server-owned runs: the timeline's cadence follows the budget, the end says which budget ended it, autosaves
are written mid-run and at the end and pruned oldest-first, and the server forgets old ended runs."""
from __future__ import annotations

import os
import time

import pytest
import torch

from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import load_checkpoint
from transformer.train import (
    AUTOSAVE_PREFIX,
    JobPlan,
    LiveRun,
    RunRecord,
    ServerRuns,
    TrainingJob,
    autosave,
    autosave_name,
    prune_autosaves,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def task():
    return make_task(TaskSpec(name="reverse", n_train=300, n_valid=10, min_len=4, max_len=8))


def tiny(task, **job) -> JobPlan:
    model_cfg, train_cfg = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           model_overrides=dict(d_model=16, n_heads=2, d_ff=32),
                                           train_overrides=dict(batch_size=16, eval_every=10_000, eval_examples=10,
                                                                max_seconds=None))
    return JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, **job)


def test_a_short_time_budget_still_records_about_twenty_frames_and_says_it_ended_the_run(task):
    job = TrainingJob(tiny(task, max_steps=1_000_000, max_seconds=2.0, probe=task.probe, probe_every=10_000,
                           probe_frames=20)).start()
    assert job.join(timeout=60)
    snap = job.snapshot()
    frames = [step for step, _ in job.timeline()]
    # probe_every alone would record step 0 only; on a busy machine steps may be slower than a frame (0.1 s)
    assert min(10, snap.step // 2) <= len(frames) <= 25, (frames, snap.step)
    assert snap.status == "finished"
    assert snap.message == f"the 2-s time budget ended the run at step {snap.step:,} of 1,000,000"
    assert snap.weights_step == snap.step and snap.weights_time <= time.time()


def test_a_step_budget_spreads_the_frames_over_its_steps(task):
    job = TrainingJob(tiny(task, max_steps=60, probe=task.probe, probe_every=1_000, probe_frames=20)).start()
    assert job.join(timeout=60)
    assert [step for step, _ in job.timeline()] == list(range(0, 61, 3))
    assert job.snapshot().message == "reached its target of 60 steps"


def test_a_run_is_autosaved_while_it_trains_and_when_it_ends(task, tmp_path):
    saved: list[int] = []
    job = TrainingJob(tiny(task, max_steps=40, probe=task.probe, probe_every=5, autosave_every_s=0.0))
    run = LiveRun(job)

    def on_state(_job, state):
        path = autosave(run, tmp_path, state)
        saved.append(load_checkpoint(path).step)

    job.on_state, job.on_end = on_state, lambda _job: autosave(run, tmp_path)
    job.start()
    assert job.join(timeout=60)
    assert saved and 0 < saved[0] < 40  # mid-run: a server killed now would lose only the steps since
    assert run.autosaved_as == autosave_name(run) and run.autosaved_as.startswith(AUTOSAVE_PREFIX)
    final = load_checkpoint(tmp_path / run.autosaved_as)
    assert final.step == 40 and final.optimizer_state is not None
    weights = run.record.state["model"]
    assert all(torch.equal(final.model.state_dict()[n], weights[n]) for n in weights)  # resumes exactly


def test_autosaves_beyond_the_limit_are_pruned_oldest_first(task, tmp_path):
    first = TrainingJob(tiny(task, max_steps=1)).start()
    assert first.join(timeout=60) and first.record.step == 1
    runs = [LiveRun(TrainingJob(tiny(task, max_steps=1), first.record)) for _ in range(4)]
    for age, run in enumerate(runs):
        path = autosave(run, tmp_path, keep=10)
        os.utime(path / "config.json", (1_000_000 + age, 1_000_000 + age))
    (tmp_path / "mine").mkdir()  # a run the user named is never touched
    deleted = prune_autosaves(tmp_path, keep=2)
    assert sorted(p.name for p in deleted) == sorted(autosave_name(r) for r in runs[:2])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["mine", *(autosave_name(r) for r in runs[2:])])


def test_the_server_keeps_training_runs_and_only_the_newest_ended_ones(task):
    held = ServerRuns(keep_ended=2)
    record = RunRecord.fresh(tiny(task, max_steps=1))
    ended = [held.add(LiveRun(TrainingJob(tiny(task, max_steps=1), record))) for _ in range(4)]
    for run in ended:
        run.job._set("finished")
    training = held.add(LiveRun(TrainingJob(tiny(task, max_steps=1), record)))  # status waiting
    assert held.runs() == [training, ended[3], ended[2]]
    assert held.get(ended[0].id) is None and held.get(training.id) is training
