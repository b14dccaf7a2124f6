"""The app's training job on several local processes: the Train page's "Processes" option, same live curves."""
from __future__ import annotations

import base64
import json
import re
import threading
import time

import numpy as np
import pytest
import torch

from tests.helpers.app_session import assert_no_exception, open_app, poll, texts
from tests.helpers.same_weights import assert_same_weights
from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.train import JobPlan, TrainingJob, TrainingSlots
from ui.server import max_training_processes
from ui.train import LIVE_RUN_KEY

pytestmark = pytest.mark.slow


def _plan(task, batch_size: int, **job) -> JobPlan:
    model_cfg, train_cfg = default_configs("reverse", 30, 30, model_overrides=dict(d_model=32, d_ff=64, dropout=0.0),
                                           train_overrides=dict(eval_every=10_000, max_seconds=None,
                                                                batch_size=batch_size))
    return JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, **job)


def test_a_two_process_job_trains_the_model_a_one_process_job_trains_with_the_global_batch() -> None:
    task = make_task(TaskSpec(name="reverse", n_train=300, n_valid=10))
    two = TrainingJob(_plan(task, 8, max_steps=8, processes=2, probe=task.probe, probe_every=4,
                            publish_every_s=0.0)).start()
    assert two.join(timeout=180)
    one = TrainingJob(_plan(task, 16, max_steps=8)).start()
    assert one.join(timeout=180)
    snap = two.snapshot()
    assert snap.status == "finished" and snap.step == 8, snap.message
    assert one.snapshot().status == "finished"
    trained = two.record.model(two.plan.model_cfg)
    assert_same_weights(trained, one.record.model(one.plan.model_cfg))  # the job's state came back from rank 0
    # the live curves count the whole global batch
    assert [r["tokens"] for r in snap.history] == [r["tokens"] for r in one.snapshot().history]
    assert [s for s, _ in two.timeline()] == [0, 4, 8]  # the probe's attention is recorded as usual
    _, published = two.latest_model()
    assert all(torch.equal(a, b)
               for a, b in zip(published.state_dict().values(), trained.state_dict().values(), strict=True))


def _values(array) -> list:
    """A plotly figure's array (a list, or binary-packed {"dtype", "bdata"})."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


@pytest.mark.skipif(max_training_processes() < 2, reason="needs 2 cores for 2 processes")
def test_the_train_page_trains_on_the_processes_asked_for(studio_env) -> None:
    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    form = dict(train_d_model=16, train_n_heads=2, train_n_encoder_layers=1, train_n_decoder_layers=1,
                train_d_ff=32, train_batch_size=8, train_n_train=300, train_max_steps=6, train_eval_every=1000,
                train_eval_examples=10, train_probe_every=5, train_max_seconds=120.0, train_warmup_steps=0,
                train_processes=2)
    for key, value in form.items():
        at.number_input(key=key).set_value(value)
    at.button(key="train_start").click().run()
    assert_no_exception(at)
    assert any(m.startswith("Training started on reverse") for m in texts(at.success))
    run = at.session_state[LIVE_RUN_KEY]
    assert run.plan.processes == 2
    assert run.job.join(timeout=180)
    assert poll(at, lambda at: not run.active)
    snap = run.job.snapshot()
    assert snap.status == "finished" and snap.step == 6, snap.message
    assert snap.history[0]["tokens"] > 0
    at.run()  # the page after the run: what the job used, and its curves over every global step
    assert_no_exception(at)
    layout = [c for c in texts(at.caption) if c.startswith("Trains on")]
    assert layout and re.match(r"Trains on 2 processes × \d+ threads? each \(copies of the model that average their "
                               r"gradients every step, on the CPU\); a step sees 8 × 2 = 16 examples\.$",
                               layout[0]), layout
    curves = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    loss = next(c for c in curves if c["name"] == "train loss (per step)")
    assert _values(loss["x"]) == [1, 2, 3, 4, 5, 6] and all(y > 0 for y in _values(loss["y"]))


def test_a_job_takes_one_slot_per_process_and_waiting_jobs_start_in_order() -> None:
    slots = TrainingSlots(max_jobs=2, max_processes=2)  # a 2-core server
    started: list[str] = []

    def job(name: str, processes: int, ends: threading.Event) -> threading.Thread:
        def work() -> None:
            assert slots.wait(processes, give_up=lambda: False)
            started.append(name)
            ends.wait(30)
            slots.release(processes)
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        return thread

    def until(condition) -> None:
        deadline = time.monotonic() + 30
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert condition()

    end_one, end_two, end_late = threading.Event(), threading.Event(), threading.Event()
    threads = [job("one process", 1, end_one)]
    until(lambda: started == ["one process"])
    threads.append(job("two processes", 2, end_two))  # needs both cores: waits although a job slot is free
    until(lambda: slots.waiting() == 1)
    threads.append(job("one more", 1, end_late))  # would fit beside the first, but the 2-process job asked first
    until(lambda: slots.waiting() == 2)
    assert started == ["one process"] and slots.usage() == (1, 1)
    end_one.set()
    until(lambda: started == ["one process", "two processes"])
    assert slots.usage() == (1, 2)
    end_two.set()
    until(lambda: len(started) == 3)
    end_late.set()
    for thread in threads:
        thread.join(30)
    assert slots.usage() == (0, 0) and slots.need(3) == 2  # asking for more than the cores takes them all
    assert slots.wait(2, give_up=lambda: False)
    assert not slots.wait(1, give_up=lambda: True) and slots.waiting() == 0  # gave up: no longer in the queue
    slots.release(2)


def test_stop_ends_every_process_of_the_job_and_resume_continues_on_two() -> None:
    task = make_task(TaskSpec(name="reverse", n_train=300, n_valid=10))
    job = TrainingJob(_plan(task, 8, max_steps=100_000, processes=2)).start()
    deadline = time.monotonic() + 120
    while job.snapshot().step < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    job.stop()
    assert job.join(timeout=60)
    stopped = job.snapshot()
    assert stopped.status == "stopped" and 3 <= stopped.step < 100_000, stopped.message
    again = TrainingJob(_plan(task, 8, max_steps=stopped.step + 3, processes=2), job.record).start()
    assert again.join(timeout=120)
    assert again.snapshot().status == "finished" and job.record.step == stopped.step + 3, again.snapshot().message
