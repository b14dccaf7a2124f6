"""Background training jobs: progress, stop, the global limit, failures, the messages on the pipe."""
import dataclasses
import multiprocessing
import os
import signal
import time

import pytest
import torch

from transformer.adapters import adapter_for
from transformer.data import TaskSpec, make_task
from transformer.decode import greedy_decode
from transformer.model import default_configs
from transformer.train import JobPlan, TrainingJob, job_messages, job_supervisor

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def task():
    return make_task(TaskSpec(name="reverse", n_train=500, n_valid=10))


def plan(task, vocab: int = 30, **job) -> JobPlan:
    model_cfg, train_cfg = default_configs("reverse", vocab, vocab, model_overrides=dict(d_model=32, d_ff=64),
                                           train_overrides=dict(eval_every=10_000, max_seconds=None))
    return JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, **job)


def wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_a_job_trains_publishes_weights_and_records_the_probe(task):
    job = TrainingJob(plan(task, max_steps=40, probe=task.probe, probe_every=10, publish_every_s=0.0)).start()
    assert job.join(timeout=60)
    snap = job.snapshot()
    assert snap.status == "finished" and snap.step == 40
    assert snap.evals and snap.evals[-1]["step"] == 40
    version, model = job.latest_model()
    assert version > 1 and not model.training
    steps = [s for s, _ in job.timeline()]
    assert steps == [0, 10, 20, 30, 40]
    assert job.record.step == 40 and len(job.record.history) == 40  # the job's steps joined the run's record
    # the last published weights decode the probe exactly like the trained weights handed back do
    trained = job.record.model(job.plan.model_cfg)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), trained.parameters(), strict=True))
    a = greedy_decode(adapter_for(model, task.src_tokenizer, task.tgt_tokenizer), task.probe)
    b = greedy_decode(adapter_for(trained, task.src_tokenizer, task.tgt_tokenizer), task.probe)
    assert a.output_tokens == b.output_tokens


def test_stop_ends_the_job_after_the_current_step(task):
    job = TrainingJob(plan(task, max_steps=100_000)).start()
    assert wait_for(lambda: job.snapshot().step > 2)
    job.stop()
    assert job.join(timeout=10)
    snap = job.snapshot()
    assert snap.status == "stopped" and 2 < snap.step < 100_000 and not snap.active


def test_jobs_over_the_global_limit_wait_with_a_status(task):
    running = [TrainingJob(plan(task, max_steps=100_000)).start() for _ in range(job_supervisor.MAX_CONCURRENT_JOBS)]
    try:
        assert wait_for(lambda: all(j.snapshot().status == "running" for j in running))
        extra = TrainingJob(plan(task, max_steps=5)).start()
        time.sleep(0.5)
        assert extra.snapshot().status == "waiting" and extra.snapshot().step == 0
        running[0].stop()
        assert extra.join(timeout=30) and extra.snapshot().status == "finished"
    finally:
        for j in running:
            j.stop()
            j.join(timeout=10)


def test_an_exception_in_the_training_process_is_reported_and_the_model_stays_usable(task):
    job = TrainingJob(plan(task, vocab=5, max_steps=100)).start()  # the task's ids do not fit a 5-token vocabulary
    assert job.join(timeout=60)
    snap = job.snapshot()
    assert snap.status == "failed" and "IndexError" in snap.message and snap.step == 0
    _, model = job.latest_model()
    assert model is not None and not model.training
    assert job_supervisor.running_jobs() == 0


def test_a_killed_training_process_is_reported_and_the_run_goes_back_to_where_the_job_began(task):
    first = TrainingJob(plan(task, max_steps=5)).start()
    record = first.record
    assert first.join(timeout=60) and record.step == 5
    weights = {k: v.clone() for k, v in record.state["model"].items()}
    job = TrainingJob(plan(task, max_steps=100_000), record).start()
    assert wait_for(lambda: job.snapshot().step > 10)
    os.kill(job.pid, signal.SIGKILL)
    assert job.join(timeout=30)
    snap = job.snapshot()
    assert snap.status == "failed" and "ended unexpectedly" in snap.message and "step 5" in snap.message
    assert snap.step == 5 and len(snap.history) == 5  # the run is back where the job began ...
    assert record.step == 5 and len(record.history) == 5
    assert all(torch.equal(weights[k], v) for k, v in record.state["model"].items())  # ... weights included
    _, model = job.latest_model()
    assert greedy_decode(adapter_for(model, task.src_tokenizer, task.tgt_tokenizer), "abc").steps
    assert job_supervisor.running_jobs() == 0


def test_the_pipe_carries_typed_messages_built_by_keyword():
    here, there = multiprocessing.Pipe()
    progress = job_messages.Progress(step=3, elapsed=1.5, run_seconds=2.0, steps_per_s=2.0, tokens_per_s=40.0,
                                     rows=[{"step": 3, "loss": 1.0}])
    job_messages.send(here, progress)
    assert job_messages.receive(there) == progress
    with pytest.raises(TypeError):
        job_messages.Progress(3, 1.5, 2.0, 2.0, 40.0, [])  # no positional tuples: every field is named
    with pytest.raises(dataclasses.FrozenInstanceError):
        progress.step = 4
