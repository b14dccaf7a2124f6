"""AppTest: runs belong to the server (a reload re-attaches; a run left alone ends autosaved), and every view says
which weights it shows and follows a live run's newest weights."""
from __future__ import annotations

import re

import pytest

from tests.helpers.app_session import assert_no_exception, open_app, poll, texts
from tests.helpers.tiny_runs import live_run_of, start_tiny_run
from transformer.store import load_checkpoint
from transformer.train import AUTOSAVE_PREFIX, server_runs
from ui.train import BusyError, resume_run


def _step_metric(at) -> int:
    metric = next(m for m in at.metric if m.label == "Step")
    return int(metric.value.replace(",", ""))


def _weights_step(at) -> int | None:
    """The training step the page's weights label names ("Weights of step 378 · ...")."""
    for caption in texts(at.caption):
        found = re.match(r"Weights of step ([\d,]+)", caption)
        if found:
            return int(found.group(1).replace(",", ""))
    return None


def test_a_reload_sees_the_run_and_can_watch_stop_and_resume_it(studio_env) -> None:
    first = open_app("train")
    run = start_tiny_run(first, train_max_steps=50_000, train_max_seconds=120.0)
    try:
        reloaded = open_app("train")  # F5: a new session, which watches nothing yet
        assert live_run_of(reloaded) is None
        options = reloaded.sidebar.selectbox(key="sidebar_model").options
        assert f"{run.name}  ·  Live training" in options
        reloaded.button(key=f"train_watch_{run.id}").click().run()
        assert_no_exception(reloaded)
        assert live_run_of(reloaded) is run
        assert reloaded.sidebar.selectbox(key="sidebar_model").value == f"live:{run.id}"
        assert poll(reloaded, lambda a: run.job.snapshot().step >= 3), "the watched run never advanced"
        seen = _step_metric(reloaded)
        assert poll(reloaded, lambda a: _step_metric(a) > seen), "the re-attached page did not show progress"
        reloaded.button(key="train_stop").click().run()  # either watcher can steer the run
        assert poll(first, lambda a: not run.active, seconds=30)
        stopped = run.record.step
        first.run()
        first.button(key="train_resume").click().run()
        assert poll(reloaded, lambda a: run.job.snapshot().step > stopped), \
            "Resume from the other session did not train"
        reloaded.run()
        assert reloaded.button(key="train_resume").disabled  # one training process per run
        with pytest.raises(BusyError):
            resume_run(run, 10)  # a click that raced the other session's Resume is refused too
        assert run.active and run.job_number == 2
    finally:
        run.job.stop()
        run.job.join(20)


def test_a_run_left_alone_trains_to_its_budget_and_is_autosaved(studio_env) -> None:
    at = open_app("train")
    run = start_tiny_run(at, train_max_steps=30, train_max_seconds=120.0)
    del at  # the tab is closed: nobody watches the run any more
    assert run.job.join(60), "the run did not end at its budget"
    assert run.job.snapshot().status == "finished" and run.record.step == 30
    assert "reached its target of 30 steps" in run.job.snapshot().message
    server_runs.clear()  # even once the server forgets the run, its autosave remains
    later = open_app()
    options = later.sidebar.selectbox(key="sidebar_model").options
    autosaved = [o for o in options if o.startswith(AUTOSAVE_PREFIX)]
    assert len(autosaved) == 1 and autosaved[0].endswith("Saved run"), options
    name = autosaved[0].split("  ·  ")[0]
    assert load_checkpoint(studio_env / name).step == 30
    later.sidebar.selectbox(key="sidebar_model").set_value(f"run:{name}").run()
    later.switch_page("pages/decode.py").run()
    assert_no_exception(later)
    assert _weights_step(later) == 30


def test_the_decode_view_of_a_live_run_follows_its_weights_and_says_the_step(studio_env) -> None:
    at = open_app("train")
    run = start_tiny_run(at, train_max_steps=50_000, train_max_seconds=120.0)
    try:
        at.switch_page("pages/decode.py").run()
        assert poll(at, lambda a: (_weights_step(a) or 0) >= 1)
        shown, heading = _weights_step(at), at.subheader[0].value
        assert any("training: this view follows its newest weights" in c for c in texts(at.caption))
        assert poll(at, lambda a: (_weights_step(a) or 0) > shown + 20), "the label never named newer weights"
        assert at.subheader[0].value != heading  # decoded with the newer weights: probabilities changed
        run.job.stop()
        assert run.job.join(20)
        at.run()
        assert _weights_step(at) == run.record.step
        assert any("(not training)" in c for c in texts(at.caption))
    finally:
        run.job.stop()
        run.job.join(20)


@pytest.mark.parametrize("pairs, label", [(6, "measured on the 6 training pairs"), (40, "held-out examples")])
def test_user_pairs_report_a_held_out_score_or_say_it_is_on_the_training_pairs(studio_env, pairs, label) -> None:
    at = open_app("train")
    at.selectbox(key="train_task").set_value("corpus").run()
    lines = [f"w{i} x{i % 3} -> y{i % 3} v{i}" for i in range(pairs)]
    at.text_area(key="train_corpus_text").input("\n".join(lines)).run()
    run = start_tiny_run(at, train_max_steps=20, train_eval_every=10)
    try:
        assert poll(at, lambda a: not run.active, seconds=60)
        at.run()
        validation = [m for m in texts(at.markdown) if m.startswith("**Validation**")]
        assert validation and label in validation[0], validation
    finally:
        run.job.stop()
        run.job.join(20)
