"""A checkpoint's known heads (the card's "known_heads") survive save and load, show in the card, and a head the model
does not have or a label not written as Head.label writes it is refused."""
from __future__ import annotations

import json

import pytest

from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import CheckpointError, load_checkpoint, save_checkpoint, write_known_heads
from transformer.train import Trainer, checkpoint_from_trainer

HEADS = {"self:L1H2": "previous-token", "self:L2H1": "induction"}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    task = make_task(TaskSpec(name="induction", n_train=50, n_valid=5))
    cfg, train = default_configs("induction", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                 model_overrides={"d_model": 16, "d_ff": 16, "tie_embeddings": True},
                                 train_overrides={"max_steps": 1})
    ckpt = checkpoint_from_trainer(Trainer(task, cfg, train))
    ckpt.known_heads = dict(HEADS)
    return save_checkpoint(ckpt, tmp_path_factory.mktemp("ckpt") / "induction")


def test_the_known_heads_round_trip_through_save_and_load_and_show_in_the_card(saved):
    loaded = load_checkpoint(saved)
    assert loaded.known_heads == HEADS
    assert loaded.card()["known_heads"] == HEADS
    assert json.loads((saved / "config.json").read_text())["known_heads"] == HEADS


def test_a_checkpoint_without_known_heads_has_none_in_its_card(saved, tmp_path):
    ckpt = load_checkpoint(saved)
    ckpt.known_heads = {}
    plain = save_checkpoint(ckpt, tmp_path / "plain")
    assert "known_heads" not in json.loads((plain / "config.json").read_text())
    assert "known_heads" not in load_checkpoint(plain).card()


@pytest.mark.parametrize("heads, message", [({"self:L3H1": "induction"}, "has no head self:L3H1"),
                                             ({"cross:L1H1": "induction"}, "has no head cross:L1H1"),
                                             ({"self.L1H1": "induction"}, "as Head.label does"),
                                             ({"self:L1H1": 3}, "head labels -> roles")])
def test_a_head_the_model_lacks_or_a_label_written_otherwise_is_refused(saved, tmp_path, heads, message):
    with pytest.raises(CheckpointError, match=message):
        write_known_heads(saved, heads)
    config = json.loads((saved / "config.json").read_text())
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in saved.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "config.json").write_text(json.dumps({**config, "known_heads": heads}))
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(broken)


def test_write_known_heads_stores_them_in_place(saved):
    write_known_heads(saved, {"self:L2H4": "induction"})
    assert load_checkpoint(saved).known_heads == {"self:L2H4": "induction"}
    write_known_heads(saved, HEADS)
