"""The evaluation of a stream model scores the tokens its streams determine ("determined_accuracy"): the shipped
recall model recalls every asked symbol although most of a stream is filler it cannot predict, and the figure is the
one the model's own logits give on the same validation streams, read one stream at a time."""
from __future__ import annotations

from functools import cache

import pytest
import torch

from tests.helpers import ROOT
from transformer.data import END_ID, START_ID, TaskSpec, make_task
from transformer.store import load_checkpoint, task_for_checkpoint
from transformer.train import evaluate_model

N = 60  # validation streams evaluated


@cache
def shipped(name: str):
    folder = ROOT / "checkpoints" / name
    if not (folder / "config.json").exists():
        pytest.skip(f"checkpoints/{name} not shipped")
    ckpt = load_checkpoint(folder, load_optimizer=False, load_frames=False)
    return ckpt, task_for_checkpoint(ckpt)


@cache
def evaluated(name: str) -> dict:
    """The shipped model's evaluation on its first N validation streams (once per process: two tests read it)."""
    ckpt, task = shipped(name)
    return evaluate_model(ckpt.model, task, N)


def recomputed(name: str) -> float:
    """Greedy accuracy at the determined positions, from the model's logits on each stream alone."""
    ckpt, task = shipped(name)
    hit = total = 0
    for example in task.valid[:N]:
        ids = ckpt.tgt_tokenizer.encode(example.target)
        with torch.no_grad():  # the prompt is empty: the source is its </s>, the decoder reads <s> and the stream
            logits = ckpt.model(torch.tensor([[END_ID]]), torch.tensor([[START_ID, *ids]]))
        predicted = logits[0].argmax(-1)  # the row of input k predicts symbol k of the stream
        where = task.determined[example.target]
        hit += sum(int(predicted[p]) == ids[p] for p in where)
        total += len(where)
    return hit / total


@pytest.mark.parametrize("name", ["recall", "induction"])
def test_determined_accuracy_is_what_the_models_own_logits_give_on_the_same_streams(name):
    metrics = evaluated(name)
    assert metrics["determined_accuracy"] == pytest.approx(recomputed(name), abs=1e-12)
    assert metrics["determined_accuracy"] >= 0.9 > metrics["token_accuracy"]  # most of a stream is filler


def test_the_shipped_recall_model_gets_the_determined_tokens_right_and_its_saved_metrics_say_so():
    ckpt, _ = shipped("recall")
    assert evaluated("recall")["determined_accuracy"] >= 0.9
    assert ckpt.metrics["determined_accuracy"] >= 0.9 and ckpt.card()["metrics"]["determined_accuracy"] >= 0.9


def test_a_task_without_determined_positions_is_scored_as_before():
    from transformer.model import ModelConfig, build_model

    task = make_task(TaskSpec(name="reverse", n_train=30, n_valid=8))
    torch.manual_seed(0)
    model = build_model(ModelConfig(src_vocab_size=task.src_tokenizer.vocab_size,
                                    tgt_vocab_size=task.tgt_tokenizer.vocab_size, d_model=16, n_heads=2,
                                    n_encoder_layers=1, n_decoder_layers=1, d_ff=32))
    metrics = evaluate_model(model, task, 8)
    assert "determined_accuracy" not in metrics and {"loss", "token_accuracy", "exact_match"} <= set(metrics)
