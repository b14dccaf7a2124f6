"""Load and isolation: two runs training at once, sessions that keep to themselves, 100 start/stop/reload cycles."""
from __future__ import annotations

import gc
import os
import threading
import time

import pytest
import torch

from tests.helpers.app_session import assert_no_exception, open_app, texts
from tests.helpers.tiny_runs import live_run_of, start_tiny_run
from transformer.data import TaskSpec, make_task
from transformer.model import Seq2SeqTransformer, default_configs
from transformer.store import bundle_bytes, load_checkpoint
from transformer.train import (
    AUTOSAVE_PREFIX,
    KEEP_ENDED_RUNS,
    MAX_AUTOSAVES,
    JobPlan,
    Trainer,
    TrainingJob,
    job_supervisor,
    server_runs,
)
from ui.train import LIVE_RUN_KEY, new_live_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def task():
    return make_task(TaskSpec(name="reverse", n_train=300, n_valid=10, min_len=4, max_len=8))


def tiny_plan(task, **job) -> JobPlan:
    """A small model's job; the same seed and no dropout, so two of them train to identical weights."""
    model_cfg, train_cfg = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           model_overrides=dict(d_model=16, n_heads=2, d_ff=32, dropout=0.0),
                                           train_overrides=dict(batch_size=16, eval_every=10_000, eval_examples=10,
                                                                max_seconds=None))
    return JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, **job)


def test_two_jobs_at_once_both_progress_and_neither_corrupts_the_other(task) -> None:
    plan = tiny_plan(task, max_steps=40, probe=task.probe, probe_every=5, publish_every_s=0.0)
    solo = Trainer(plan.task, plan.model_cfg, plan.train_cfg)
    solo.run(max_steps=40)
    running = [TrainingJob(plan).start() for _ in range(2)]
    assert all(job.join(timeout=120) for job in running)
    expected = solo.model.state_dict()
    for job in running:
        assert job.snapshot().status == "finished" and job.record.step == 40
        weights = job.record.state["model"]
        assert all(torch.equal(weights[name], expected[name]) for name in expected)  # as if it had trained alone
        _, published = job.latest_model()
        assert all(torch.equal(p, weights[n]) for n, p in published.state_dict().items())


def _until(condition, sessions, seconds: float = 60.0) -> bool:
    """Rerun every session (as their open pages do) until `condition()` holds or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for at in sessions:
            at.run()
            assert_no_exception(at)
        if condition():
            return True
        time.sleep(0.2)
    return False


def _options(at) -> list[str]:
    return at.sidebar.selectbox(key="sidebar_model").options


def test_two_sessions_train_at_once_and_keep_to_themselves(studio_env, tiny_checkpoint_dir) -> None:
    first, second = open_app("train"), open_app("train")
    run_a, run_b = [start_tiny_run(at, train_max_steps=50_000, train_max_seconds=120.0) for at in (first, second)]
    try:
        assert _until(lambda: run_a.job.snapshot().step >= 3 and run_b.job.snapshot().step >= 3, [first, second]), \
            "both sessions should train at once (the server allows two jobs)"
        shared = {p.data_ptr() for p in run_a.job.latest_model()[1].parameters()} & \
                 {p.data_ptr() for p in run_b.job.latest_model()[1].parameters()}
        assert run_a is not run_b and not shared  # two models, no tensor in common
        live = sorted(f"{r.name}  ·  Live training" for r in (run_a, run_b))
        for at, own in ((first, run_a), (second, run_b)):  # runs belong to the server: both see both, each
            assert sorted(o for o in _options(at) if "Live" in o) == live  # watches and decodes with its own
            assert at.sidebar.selectbox(key="sidebar_model").value == f"live:{own.id}"
        first.sidebar.file_uploader[0].set_value(("mine.zip", bundle_bytes(tiny_checkpoint_dir / "reverse"),
                                                  "application/zip"))
        first.run()
        assert "mine  ·  Uploaded" in _options(first) and "mine  ·  Uploaded" not in _options(second)
        first.switch_page("pages/train.py").run()
        first.button(key="train_stop").click().run()
        assert _until(lambda: not run_a.active, [first])
        first.run()
        first.text_input(key="train_save_name").input("from-a")
        first.button(key="train_save").click().run()
        assert any("Saved as “from-a”" in m for m in texts(first.success)), texts(first.error)
        saved = load_checkpoint(studio_env / "from-a").model.state_dict()
        assert all(torch.equal(saved[n], p) for n, p in run_a.record.state["model"].items())
        step_b = run_b.job.snapshot().step
        assert _until(lambda: run_b.job.snapshot().step > step_b, [second])  # the other session trains on
        assert "from-a  ·  Saved run" in _options(second)  # a saved run is shared too
        assert run_b.active and second.session_state[LIVE_RUN_KEY] is run_b
    finally:
        for run in (run_a, run_b):
            run.job.stop()
            run.job.join(20)


def rss_bytes() -> int:
    """Resident memory of this process (/proc/self/statm)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def live_models() -> int:
    return sum(type(o) is Seq2SeqTransformer for o in gc.get_objects())


def test_100_start_stop_reload_cycles_keep_server_memory_flat(task, studio_env) -> None:
    """Each cycle starts a run the way the app does (server-owned, autosaved), stops every other one, and every
    tenth cycle a reloaded tab re-attaches to it; the server keeps a bounded number of runs and autosaves."""
    def cycle(i: int) -> None:
        run = new_live_run(tiny_plan(task, max_steps=2, max_seconds=60.0, probe=task.probe, probe_every=5))
        job = run.job
        job.start()
        if i % 2:
            job.stop()
        assert job.join(timeout=30)
        if i % 10 == 0:  # F5: a new session finds the run on the server and watches it
            at = open_app("train")
            at.button(key=f"train_watch_{run.id}").click().run()
            assert_no_exception(at)
            assert live_run_of(at) is run and at.sidebar.selectbox(key="sidebar_model").value == f"live:{run.id}"
            assert int(at.metric[0].value.replace(",", "")) == run.record.step

    for i in range(20):  # warm-up: allocator pools, caches and the server's runs fill once
        cycle(i)
    gc.collect()
    rss, models = rss_bytes(), live_models()
    for i in range(100):
        cycle(i)
    gc.collect()
    assert rss_bytes() < 1.10 * rss, f"memory grew from {rss / 2**20:.0f} MiB to {rss_bytes() / 2**20:.0f} MiB"
    assert live_models() <= models  # runs beyond the kept ones are forgotten with their models
    assert not [t for t in threading.enumerate() if t.name == "attention-studio-training"]
    assert job_supervisor.running_jobs() == 0
    assert len(server_runs.runs()) == KEEP_ENDED_RUNS
    assert len([p for p in studio_env.iterdir() if p.name.startswith(AUTOSAVE_PREFIX)]) == MAX_AUTOSAVES
