"""The app's training job on several local processes: the Train page's "Processes" option, same live curves."""
from __future__ import annotations

import time

import pytest
import torch
from app_session import assert_no_exception, open_app, poll, texts
from same_weights import assert_same_weights

from transformer.data import make_task
from transformer.model import default_configs
from transformer.train import Trainer, TrainingJob
from ui.live_run import LIVE_RUN_KEY
from ui.settings import max_training_processes


def _trainer(task, batch_size: int) -> Trainer:
    model_cfg, train_cfg = default_configs("reverse", 30, 30, model_overrides=dict(d_model=32, d_ff=64, dropout=0.0),
                                           train_overrides=dict(eval_every=10_000, max_seconds=None,
                                                                batch_size=batch_size))
    return Trainer(task, model_cfg, train_cfg)


def test_a_two_process_job_trains_the_model_a_one_process_job_trains_with_the_global_batch() -> None:
    task = make_task("reverse", n_train=300, n_valid=10)
    two = TrainingJob(_trainer(task, 8), max_steps=8, processes=2, probe=task.probe, probe_every=4,
                      publish_every_s=0.0).start()
    assert two.join(timeout=180)
    one = TrainingJob(_trainer(task, 16), max_steps=8).start()
    assert one.join(timeout=180)
    snap = two.snapshot()
    assert snap.status == "finished" and snap.step == 8, snap.message
    assert one.snapshot().status == "finished"
    assert_same_weights(two.trainer.model, one.trainer.model)  # the job's state came back from rank 0
    # the live curves count the whole global batch
    assert [r["tokens"] for r in snap.history] == [r["tokens"] for r in one.snapshot().history]
    assert [s for s, _ in two.timeline()] == [0, 4, 8]  # the probe's attention is recorded as usual
    _, published = two.latest_model()
    assert all(torch.equal(a, b) for a, b in zip(published.state_dict().values(),
                                                 two.trainer.model.state_dict().values()))


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
    assert run.job.processes == 2
    assert run.job.join(timeout=180)
    assert poll(at, lambda at: not run.active)
    snap = run.job.snapshot()
    assert snap.status == "finished" and snap.step == 6, snap.message
    assert snap.history[0]["tokens"] > 0


def test_stop_ends_every_process_of_the_job_and_resume_continues_on_two() -> None:
    task = make_task("reverse", n_train=300, n_valid=10)
    trainer = _trainer(task, 8)
    job = TrainingJob(trainer, max_steps=100_000, processes=2).start()
    deadline = time.monotonic() + 120
    while job.snapshot().step < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    job.stop()
    assert job.join(timeout=60)
    stopped = job.snapshot()
    assert stopped.status == "stopped" and 3 <= stopped.step < 100_000, stopped.message
    again = TrainingJob(trainer, max_steps=stopped.step + 3, processes=2).start()
    assert again.join(timeout=120)
    assert again.snapshot().status == "finished" and trainer.step == stopped.step + 3, again.snapshot().message
