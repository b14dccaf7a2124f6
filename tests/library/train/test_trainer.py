"""Training: a tiny model overfits, the schedule, budgets, and the non-finite loss guard."""
import threading

import pytest
import torch

from transformer.data import TaskSpec, make_task
from transformer.model import TrainConfig, default_configs
from transformer.train import NonFiniteLossError, Trainer, evaluate_model, lr_at

pytestmark = pytest.mark.slow


def tiny(task, **train):
    model_cfg, train_cfg = default_configs(task.name, task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           model_overrides=dict(d_model=32, d_ff=64, n_heads=2),
                                           train_overrides=dict(max_seconds=None, eval_every=10_000) | train)
    return Trainer(task, model_cfg, train_cfg)


def test_a_tiny_model_overfits_a_tiny_batch():
    task = make_task(TaskSpec(name="reverse", n_train=16, n_valid=4, min_len=3, max_len=5))
    task.valid = task.train[:16]
    trainer = tiny(task, batch_size=16, lr=1e-2, warmup_steps=10, max_steps=300)
    first = trainer.train_step().loss
    trainer.run()
    metrics = evaluate_model(trainer.model, task, n=16)
    assert trainer.history[-1]["loss"] < 0.05 < first
    assert metrics["exact_match"] == 1.0 and metrics["token_accuracy"] == 1.0


def test_word_level_evaluation_reports_bleu_and_chrf():
    task = make_task(TaskSpec(name="corpus",
                              text="ich mochte ein bier\ti want a beer\nich mochte ein cola\ti want a coke"))
    trainer = tiny(task, batch_size=2, lr=1e-2, warmup_steps=5, max_steps=150)
    trainer.run()
    metrics = evaluate_model(trainer.model, task)
    assert metrics["exact_match"] == 1.0
    assert metrics["bleu"] == pytest.approx(100.0) and metrics["chrf"] == pytest.approx(100.0)


def test_warmup_then_cosine_decay():
    cfg = TrainConfig(lr=1e-3, warmup_steps=10, max_steps=110, schedule="cosine", min_lr_ratio=0.1)
    assert lr_at(cfg, 0) == pytest.approx(1e-4)
    assert lr_at(cfg, 9) == pytest.approx(1e-3)
    assert lr_at(cfg, 60) == pytest.approx(0.55e-3)
    assert lr_at(cfg, 109) == pytest.approx(1e-4, rel=1e-2)
    assert lr_at(TrainConfig(lr=1e-3, warmup_steps=0, schedule="constant"), 500) == 1e-3


def test_with_a_time_budget_the_decay_follows_whichever_runs_out_first():
    cfg = TrainConfig(lr=1e-3, warmup_steps=10, max_steps=110, max_seconds=20.0, min_lr_ratio=0.1)
    assert lr_at(cfg, 60, elapsed=1.0) == pytest.approx(0.55e-3)  # steps lead
    assert lr_at(cfg, 20, elapsed=10.0) == pytest.approx(0.55e-3)  # time leads: half the budget spent
    assert lr_at(cfg, 30, elapsed=25.0) == pytest.approx(1e-4)  # budget spent: fully annealed


def test_budgets_and_stop_event_end_a_run():
    task = make_task(TaskSpec(name="copy", n_train=200, n_valid=10))
    trainer = tiny(task, max_steps=1000)
    assert trainer.run(max_steps=5) == "step budget" and trainer.step == 5
    stop = threading.Event()
    stop.set()
    assert trainer.run(stop=stop) == "stopped" and trainer.step == 5
    assert trainer.run(max_seconds=0.2) == "time budget" and 5 < trainer.step < 1000


def test_non_finite_loss_stops_with_a_message_and_keeps_the_last_good_weights():
    task = make_task(TaskSpec(name="reverse", n_train=200, n_valid=10))
    trainer = tiny(task, max_steps=50)
    trainer.run(max_steps=2)
    last_good = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train_step()  # a finite step from last_good
    with torch.no_grad():  # the update overflowed: one weight is now infinite
        trainer.model.generator.weight[0, 0] = float("inf")
    with pytest.raises(NonFiniteLossError, match="lower learning rate"):
        trainer.train_step()
    after = list(trainer.model.parameters())
    assert all(torch.equal(a, b) for a, b in zip(after, last_good, strict=True))
    assert trainer.step == 3
    trainer.train_step()  # training can go on from the restored weights
    assert torch.isfinite(torch.tensor(trainer.history[-1]["loss"]))


def test_same_seed_same_run():
    task = make_task(TaskSpec(name="sort", n_train=300, n_valid=10))
    a, b = tiny(task, max_steps=5), tiny(task, max_steps=5)
    a.run()
    b.run()
    assert [h["loss"] for h in a.history] == [h["loss"] for h in b.history]
