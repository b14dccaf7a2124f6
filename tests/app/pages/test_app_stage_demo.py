"""AppTest: the Train page's stage demo (the switch beside the task, the recipe it fills in, the rule it trains
under) and the task row with the Train button above every hyperparameter."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, open_app, poll, texts
from transformer.model import STAGE_RECIPES
from ui.server import max_training_processes
from ui.train import LIVE_RUN_KEY, STAGE_KEY


def test_the_stage_demo_fills_the_recipe_and_the_train_button_sits_beside_it(studio_env):
    at = open_app("train")
    assert_no_exception(at)
    assert "Every hyperparameter" in [e.label for e in at.expander]
    toggle = at.toggle(key=STAGE_KEY)
    assert toggle.value is False and not toggle.disabled
    assert not at.button(key="train_start").disabled
    toggle.set_value(True).run()
    assert_no_exception(at)
    recipe = STAGE_RECIPES["reverse"]
    assert at.number_input(key="train_n_heads").value == recipe.model["n_heads"]
    assert at.number_input(key="train_lr").value == pytest.approx(recipe.train["lr"])
    processes = min(recipe.processes, max_training_processes())  # 2 processes x 64 where there are 2 cores
    assert at.number_input(key="train_processes").value == processes
    assert at.number_input(key="train_batch_size").value * processes == recipe.train["batch_size"]
    assert at.number_input(key="train_max_seconds").value == recipe.rule.max_seconds
    assert at.selectbox(key="train_preset").disabled  # the stage demo has sizes of its own
    assert any(c.startswith("Stage demo: trains until the picture is clean") for c in texts(at.caption))
    at.selectbox(key="train_task").set_value("toy-en-de").run()
    assert at.number_input(key="train_n_heads").value == STAGE_RECIPES["toy-en-de"].model["n_heads"]
    at.selectbox(key="train_task").set_value("sort").run()
    assert at.toggle(key=STAGE_KEY).disabled
    assert not any(c.startswith("Stage demo:") for c in texts(at.caption))


def test_a_stage_run_trains_under_the_rule_and_says_whether_the_picture_is_clean(studio_env):
    at = open_app("train")
    at.toggle(key=STAGE_KEY).set_value(True).run()
    for key, value in dict(train_d_model=16, train_batch_size=16, train_n_train=300, train_max_steps=3,
                           train_eval_examples=10, train_probe_every=5).items():
        at.number_input(key=key).set_value(value)
    at.button(key="train_start").click().run()
    assert_no_exception(at)
    run = at.session_state[LIVE_RUN_KEY]
    try:
        assert poll(at, lambda a: not run.active, seconds=120), "the run never ended"
        message = run.job.snapshot(history_tail=1).message
        assert "the picture is not clean yet at step 3" in message and "exact match 0.99" in message
        at.run()  # the finished run's bar: full, and it says so
        bar = at.get("progress")[0]
        assert bar.value == 100 and bar.proto.text.startswith(f"Finished · {run.name} · done at step 3 in"), bar.proto
    finally:
        run.job.stop()
        run.job.join(20)


def test_a_stage_run_finished_long_before_the_step_cap_reads_as_done():
    from transformer.train.job_supervisor import JobSnapshot
    from ui.train.live_view import status_bar

    snap = JobSnapshot(status="finished", message="the picture is clean", step=450, target_steps=5000, elapsed=25.0,
                       max_seconds=300.0, steps_per_s=0.0, tokens_per_s=0.0, history=(), evals=(),
                       weights_version=1, run_seconds=25.0)
    assert status_bar("reverse", snap) == (
        1.0, "Finished · reverse · done at step 450 in 25 s (before the cap of 5,000 steps or 5:00)")


def test_a_run_its_time_budget_ended_says_so_and_a_run_at_step_0_is_preparing():
    from dataclasses import replace

    from transformer.train.job_supervisor import JobSnapshot
    from ui.train.live_view import status_bar

    snap = JobSnapshot(status="finished", message="", step=127, target_steps=1400, elapsed=16.0, max_seconds=15.0,
                       steps_per_s=0.0, tokens_per_s=0.0, history=(), evals=(), weights_version=1, run_seconds=16.0)
    assert status_bar("reverse", snap)[1] == ("Finished · reverse · done at step 127 in 16 s: its time cap of 15 s "
                                              "ended it, before the 1,400 steps planned")
    assert status_bar("reverse", replace(snap, step=1400))[1].endswith("(its cap of 1,400 steps)")
    preparing = status_bar("reverse", replace(snap, status="running", step=0, run_seconds=3.0))
    assert preparing == (0.0, "Preparing · reverse · building the model and its data before the first step")
