"""The stage demo: its recipes, the rule that stops a run when the picture is clean, `train --stage`, and the rule
inside the app's training process."""
from __future__ import annotations

import pytest

from transformer.cli import main
from transformer.data import TaskSpec, make_task
from transformer.model import STAGE_RECIPES, CleanRule, ConfigError, stage_configs
from transformer.train import CLEAN, JobPlan, StopWhenClean, Trainer, TrainingJob

TINY_MODEL = dict(d_model=16, n_heads=2, d_ff=32)
EASY = CleanRule(min_exact_match=0.0, min_alignment=0.0, check_every=2, gate_accuracy=0.0, eval_examples=5,
                 confirm_examples=5)
HARD = CleanRule(min_exact_match=1.0, min_alignment=1.0, check_every=2, gate_accuracy=0.0, eval_examples=5)


def _trainer(rule: CleanRule, steps: int = 6) -> tuple[Trainer, StopWhenClean]:
    task = make_task(TaskSpec(name="reverse", n_train=200, n_valid=20))
    model_cfg, train_cfg, _ = stage_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                            TINY_MODEL, dict(batch_size=8, max_steps=steps, max_seconds=None))
    rule_cb = StopWhenClean(rule)
    return Trainer(task, model_cfg, train_cfg, callbacks=[rule_cb]), rule_cb


def test_the_recipes_are_configs_with_a_rule_and_the_cap_as_the_time_budget():
    model_cfg, train_cfg, rule = stage_configs("reverse", 29, 29)
    recipe = STAGE_RECIPES["reverse"]
    assert model_cfg.n_heads == recipe.model["n_heads"] and train_cfg.lr == recipe.train["lr"]
    assert train_cfg.max_seconds == rule.max_seconds and rule.min_exact_match == 0.99 and rule.min_alignment == 0.9
    model_cfg, train_cfg, _ = stage_configs("reverse", 29, 29, {"d_model": 32}, {"max_seconds": 5.0})
    assert model_cfg.d_model == 32 and train_cfg.max_seconds == 5.0  # the flags and fields win
    assert stage_configs("toy-en-de", 50, 50)[2].min_alignment == 0.9
    with pytest.raises(ConfigError, match="stage demo is for reverse and toy-en-de"):
        stage_configs("sort", 29, 29)


def test_the_rule_needs_both_exact_match_and_an_aligned_head():
    rule = CleanRule()
    assert rule.met({"exact_match": 0.995, "alignment": {"best": 0.93, "best_head": "L1H1"}})
    assert not rule.met({"exact_match": 0.98, "alignment": {"best": 0.99, "best_head": "L1H1"}})
    assert not rule.met({"exact_match": 1.0, "alignment": {"best": 0.6, "best_head": "L1H1"}})
    assert not rule.met({"exact_match": 1.0})  # no alignment: never clean


@pytest.mark.slow
def test_a_clean_picture_ends_the_run_and_says_so():
    trainer, rule_cb = _trainer(EASY)
    assert trainer.run() == CLEAN
    assert trainer.step == EASY.check_every and rule_cb.checks == 1
    assert trainer.evals[-1]["step"] == trainer.step and trainer.evals[-1]["n"] == EASY.eval_examples
    assert rule_cb.note(trainer).startswith(f"the picture is clean at step {trainer.step}")


@pytest.mark.slow
def test_a_check_that_passes_is_confirmed_on_more_examples():
    trainer, rule_cb = _trainer(CleanRule(min_exact_match=0.0, min_alignment=0.0, check_every=2, gate_accuracy=0.0,
                                          eval_examples=5, confirm_examples=500))
    assert trainer.run() == CLEAN and trainer.step == 2
    assert [m["n"] for m in trainer.evals] == [5, 20]  # the check, then all 20 validation examples
    assert rule_cb.clean["n"] == 20


@pytest.mark.slow
def test_a_picture_not_yet_clean_trains_to_the_budget_and_says_what_it_needs():
    trainer, rule_cb = _trainer(HARD, steps=4)
    assert trainer.run() == "step budget" and trainer.step == 4
    assert rule_cb.checks == 2 and rule_cb.clean is None
    assert "not clean yet at step 4" in rule_cb.note(trainer)
    gated, gated_cb = _trainer(CleanRule(check_every=2, gate_accuracy=1.0), steps=4)  # batches not all right yet
    gated.run()
    assert gated_cb.checks == 0 and gated.evals == []


@pytest.mark.slow
def test_the_app_s_training_process_stops_on_a_clean_picture():
    trainer, _ = _trainer(EASY, steps=500)
    job = TrainingJob(JobPlan(task=trainer.task, model_cfg=trainer.model_cfg, train_cfg=trainer.cfg, max_steps=500,
                              max_seconds=120, stop_rule=EASY, probe="abc", probe_every=100)).start()
    job.join(120)
    snap = job.snapshot(history_tail=1)
    assert snap.status == "finished" and snap.step == EASY.check_every
    assert "the picture is clean at step 2" in snap.message
    assert job.record.evals and job.record.evals[-1]["step"] == 2  # the rule's check reached the server


@pytest.mark.slow
def test_train_stage_flag(tmp_path, capfd):  # capfd: the stage demo launches its processes
    out = tmp_path / "rev"
    code = main(["train", "--task", "reverse", "--stage", "--n-train", "200", "--n-valid", "20", "--steps", "3",
                 "--d-model", "16", "--batch-size", "8", "--probe-frames", "0", "--out", str(out)])
    assert code == 0
    printed = capfd.readouterr().out
    assert "stage demo: the picture is not clean yet at step 3" in printed
    assert (out / "config.json").is_file()


@pytest.mark.parametrize("flags, message", [
    (["--task", "reverse", "--preset", "tiny"], "drop --preset"),
    (["--task", "sort"], "--stage is for --task reverse or toy-en-de, not sort"),
    (["--resume", "somewhere"], "--stage starts a new run"),
])
def test_train_stage_refuses_what_it_cannot_go_with(tmp_path, capsys, flags, message):
    assert main(["train", "--stage", *flags, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_decay_steps_is_the_cosine_s_length_whatever_the_time_budget():
    from transformer.model import TrainConfig
    from transformer.train import lr_at

    cfg = TrainConfig(lr=1e-2, warmup_steps=0, decay_steps=100, min_lr_ratio=0.05, max_steps=5000, max_seconds=10.0)
    assert lr_at(cfg, 50, elapsed=9.0) == pytest.approx(1e-2 * (0.05 + 0.95 * 0.5))  # not shortened by the time
    assert lr_at(cfg, 100) == lr_at(cfg, 4000) == pytest.approx(5e-4)  # then the final rate on
    assert TrainConfig.from_dict({k: v for k, v in cfg.to_dict().items() if k != "decay_steps"}).decay_steps == 0
