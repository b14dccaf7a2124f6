"""Keeping the best weights beside the last ones, standard sacrebleu scores, and bf16 mixed precision."""
import pytest
import torch

from transformer.analysis import corpus_scores
from transformer.cli import main
from transformer.data import TaskSpec, make_task
from transformer.model import ConfigError, TrainConfig, default_configs
from transformer.store import load_checkpoint, save_checkpoint
from transformer.train import KeepBest, Trainer, cpu_supports_bf16, resolve_precision

pytestmark = pytest.mark.slow


def _trainer(**train) -> Trainer:
    task = make_task(TaskSpec(name="reverse", n_train=200, n_valid=8, min_len=3, max_len=6))
    model_cfg, train_cfg = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           "tiny", {"max_len": 16}, {"max_steps": 4, "eval_examples": 8, **train})
    return Trainer(task, model_cfg, train_cfg)


def test_the_best_weights_are_kept_saved_and_labelled(tmp_path):
    trainer, best = _trainer(), KeepBest("loss")
    trainer.run(max_steps=2)
    best.on_eval(trainer, {"step": 2, "loss": 1.0, "bleu": 5.0})
    kept = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.run(max_steps=4)
    best.on_eval(trainer, {"step": 4, "loss": 2.0})  # worse: the step-2 weights stay the best
    ckpt = best.checkpoint(trainer)
    assert ckpt.step == 2 and ckpt.optimizer_state is None and "best validation loss" in ckpt.weights
    assert all(torch.equal(ckpt.model.state_dict()[k], v) for k, v in kept.items())
    assert not torch.equal(ckpt.model.state_dict()["generator.weight"], trainer.model.state_dict()["generator.weight"])
    loaded = load_checkpoint(save_checkpoint(ckpt, tmp_path / "best"))
    assert loaded.weights.startswith("best validation loss") and loaded.card()["weights"] == loaded.weights


def test_keeping_by_bleu_prefers_the_higher_score_and_no_copy_when_the_last_is_best():
    trainer, best = _trainer(), KeepBest("bleu")
    trainer.run(max_steps=1)
    best.on_eval(trainer, {"step": 1, "bleu": 3.0})
    trainer.run(max_steps=2)
    best.on_eval(trainer, {"step": 2, "bleu": 9.0})
    assert best.checkpoint(trainer) is None  # the last weights are the best ones: nothing extra to save


def test_cli_eval_says_which_weights_are_open(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--task", "reverse", "--out", str(out), "--preset", "tiny", "--steps", "3",
                 "--n-train", "100", "--n-valid", "5", "--eval-examples", "5", "--max-len", "24"]) == 0
    capsys.readouterr()
    assert main(["eval", str(out), "--n", "5"]) == 0
    assert '"weights": "last"' in capsys.readouterr().out


def test_scores_are_sacrebleu_on_cased_detokenized_text_with_a_signature():
    scores = corpus_scores(["Ein Hund rennt.", "Zwei Kinder spielen."], ["Ein Hund rennt.", "Zwei Kinder spielen."])
    assert scores["bleu"] == pytest.approx(100.0) and "tok:13a" in scores["bleu_signature"]
    assert "case:mixed" in scores["bleu_signature"] and scores["chrf_signature"].startswith("chrF2|")
    lower = corpus_scores(["ein hund rennt ."], ["Ein Hund rennt."])
    assert lower["bleu"] < 50  # lowercased, tokenized output no longer matches the raw reference


def test_precision_fp32_is_fp32_and_a_bad_precision_is_refused():
    assert resolve_precision("fp32") == ("fp32", "")
    chosen, note = resolve_precision("bf16")
    assert chosen == ("bf16" if cpu_supports_bf16() else "fp32") and (note == "") == cpu_supports_bf16()
    with pytest.raises(ConfigError, match="precision"):
        TrainConfig(precision="fp16")


def test_bf16_training_keeps_fp32_master_weights_and_lowers_the_loss():
    trainer = _trainer(precision="bf16", lr=3e-3)
    first = trainer.train_step().loss
    for _ in range(20):
        last = trainer.train_step().loss
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
    assert last < first
