"""Checkpoints: round trip, resume, atomic and refusing saves, validation of every file on load."""
from __future__ import annotations

import errno
import json
import os
import pickle
import shutil
import tempfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from transformer.data import TaskSpec, build_char_tokenizer, build_word_tokenizer, make_task
from transformer.model import default_configs
from transformer.store import (
    FORMAT_VERSION,
    CheckpointError,
    atomic,
    is_valid_run_name,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from transformer.store import checkpoint as checkpoints
from transformer.train import Trainer, checkpoint_from_trainer, trainer_from_checkpoint

SRC = torch.tensor([[4, 5, 6, 7, 2], [8, 9, 2, 0, 0]])
TGT = torch.tensor([[1, 7, 6, 5, 4], [1, 9, 8, 0, 0]])


def make_trainer(max_steps: int = 6) -> Trainer:
    task = make_task(TaskSpec(name="reverse", n_train=64, n_valid=8, min_len=3, max_len=6))
    vocab = task.src_tokenizer.vocab_size
    model_cfg, train_cfg = default_configs(
        "reverse", vocab, vocab, model_overrides=dict(d_model=16, n_heads=2, d_ff=32, max_len=16),
        train_overrides=dict(batch_size=8, max_steps=max_steps, warmup_steps=2, eval_examples=8, max_seconds=None))
    return Trainer(task, model_cfg, train_cfg)


@pytest.fixture(scope="module")
def trained() -> Trainer:
    trainer = make_trainer()
    for _ in range(3):
        trainer.train_step()
    trainer.evaluate()
    return trainer


@pytest.fixture(scope="module")
def saved(trained: Trainer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_checkpoint(checkpoint_from_trainer(trained), tmp_path_factory.mktemp("ckpt") / "run")


@pytest.fixture
def copy(saved: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(saved, tmp_path / "run"))


def logits(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(SRC, TGT)


def test_save_then_load_gives_identical_model_tokenizers_and_records(trained: Trainer, saved: Path) -> None:
    ckpt = load_checkpoint(saved)
    assert not ckpt.model.training
    assert torch.equal(logits(ckpt.model), logits(checkpoint_from_trainer(trained).model))
    assert ckpt.model_config == trained.model_cfg and ckpt.train_config == trained.cfg
    assert ckpt.src_tokenizer.tokens == trained.task.src_tokenizer.tokens
    assert ckpt.tgt_tokenizer.tokens == trained.task.tgt_tokenizer.tokens
    assert ckpt.task_spec == trained.task.spec
    assert (ckpt.step, ckpt.elapsed, ckpt.history) == (3, trained.elapsed, trained.history)
    assert ckpt.metrics["exact_match"] == trained.evals[-1]["exact_match"]
    saved_state = ckpt.optimizer_state["state"]
    live_state = trained.optimizer.state_dict()["state"]
    assert saved_state.keys() == live_state.keys()
    for index, entries in live_state.items():
        for name, value in entries.items():
            assert torch.equal(saved_state[index][name], value), (index, name)
    assert ckpt.name == "run" and ckpt.path == saved


def test_load_without_optimizer_skips_its_state(saved: Path) -> None:
    assert load_checkpoint(saved, load_optimizer=False).optimizer_state is None


def test_checkpoint_without_optimizer_state_round_trips(trained: Trainer, tmp_path: Path) -> None:
    ckpt = checkpoint_from_trainer(trained)
    ckpt.optimizer_state = None
    path = save_checkpoint(ckpt, tmp_path / "weights-only")
    assert not (path / "optimizer.safetensors").exists()
    assert load_checkpoint(path).optimizer_state is None


def test_snapshot_does_not_change_when_training_goes_on() -> None:
    trainer = make_trainer()
    trainer.train_step()
    ckpt = checkpoint_from_trainer(trainer)
    before = logits(ckpt.model).clone()
    trainer.train_step()
    assert torch.equal(logits(ckpt.model), before)
    assert not torch.equal(logits(trainer.model), before)
    assert ckpt.step == 1 and len(ckpt.history) == 1


def test_resume_continues_steps_learning_rate_schedule_and_optimizer(tmp_path: Path) -> None:
    uninterrupted = make_trainer()
    uninterrupted.run()
    first = make_trainer()
    first.run(max_steps=3)
    saved_path = save_checkpoint(checkpoint_from_trainer(first), tmp_path / "half")
    resumed = trainer_from_checkpoint(load_checkpoint(saved_path))
    assert resumed.step == 3 and resumed.elapsed == pytest.approx(first.elapsed)
    assert all(float(s["step"]) == 3 for s in resumed.optimizer.state_dict()["state"].values())
    resumed.run()
    assert [h["step"] for h in resumed.history] == [1, 2, 3, 4, 5, 6]
    assert [h["lr"] for h in resumed.history] == [h["lr"] for h in uninterrupted.history]
    assert all(float(s["step"]) == 6 for s in resumed.optimizer.state_dict()["state"].values())


def test_resumed_trainer_reads_data_with_the_checkpoint_tokenizers(saved: Path) -> None:
    ckpt = load_checkpoint(saved)
    other = make_task(TaskSpec(name="reverse", n_train=64, n_valid=8, min_len=3, max_len=6))
    trainer = trainer_from_checkpoint(ckpt, other)
    assert trainer.task.src_tokenizer is ckpt.src_tokenizer and trainer.task.tgt_tokenizer is ckpt.tgt_tokenizer
    assert other.src_tokenizer is not ckpt.src_tokenizer  # the caller's task is left alone
    trainer.train_step()
    assert torch.equal(logits(ckpt.model), logits(load_checkpoint(saved).model))  # the checkpoint is not trained


def test_saving_over_an_existing_run_needs_overwrite(trained: Trainer, saved: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="already exists"):
        save_checkpoint(checkpoint_from_trainer(trained), saved)


@pytest.mark.parametrize("atomic_swap", [True, False], ids=["exchange", "two-renames"])
def test_overwrite_replaces_the_whole_checkpoint(copy: Path, monkeypatch: pytest.MonkeyPatch,
                                                 atomic_swap: bool) -> None:
    if not atomic_swap:
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    newer = make_trainer()
    newer.train_step()
    ckpt = checkpoint_from_trainer(newer)
    ckpt.optimizer_state = None
    save_checkpoint(ckpt, copy, overwrite=True)
    loaded = load_checkpoint(copy)
    assert loaded.step == 1 and torch.equal(logits(loaded.model), logits(ckpt.model))
    assert not (copy / "optimizer.json").exists()  # nothing of the old checkpoint is mixed in
    assert sorted(p.name for p in copy.parent.iterdir()) == ["run"]


def test_failed_save_keeps_the_old_checkpoint_and_no_temp_dir(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = logits(load_checkpoint(copy).model)

    def disk_full(path: Path, tensors: dict) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(checkpoints, "write_tensors", disk_full)
    with pytest.raises(CheckpointError, match="No space left on device"):
        save_checkpoint(checkpoint_from_trainer(make_trainer()), copy, overwrite=True)
    assert torch.equal(logits(load_checkpoint(copy).model), before)
    assert sorted(p.name for p in copy.parent.iterdir()) == ["run"]


def test_unwritable_location_is_a_checkpoint_error(trained: Trainer, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    with pytest.raises(CheckpointError, match="cannot save checkpoint"):
        save_checkpoint(checkpoint_from_trainer(trained), tmp_path / "a-file" / "run")


def test_read_only_directory_is_a_checkpoint_error(trained: Trainer, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root ignores permission bits: answer as the OS would for anyone else
        def denied(*args, **kwargs):
            raise PermissionError(errno.EACCES, "Permission denied", str(folder))
        monkeypatch.setattr(tempfile, "mkdtemp", denied)
    try:
        with pytest.raises(CheckpointError, match="Permission denied"):
            save_checkpoint(checkpoint_from_trainer(trained), folder / "run")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def test_overwrite_never_replaces_a_directory_that_is_not_a_checkpoint(trained: Trainer, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")
    with pytest.raises(CheckpointError, match="not a checkpoint directory"):
        save_checkpoint(checkpoint_from_trainer(trained), tmp_path / "notes", overwrite=True)
    assert (tmp_path / "notes" / "todo.txt").read_text() == "keep me"


def test_non_finite_metrics_are_written_as_strict_json(trained: Trainer, tmp_path: Path) -> None:
    ckpt = checkpoint_from_trainer(trained)
    ckpt.metrics = {"loss": float("nan"), "exact_match": 0.5}
    path = save_checkpoint(ckpt, tmp_path / "nan")

    def reject(constant: str) -> None:
        raise ValueError(constant)

    config = json.loads((path / "config.json").read_text(), parse_constant=reject)
    assert config["metrics"] == {"loss": None, "exact_match": 0.5}
    assert config["format_version"] == FORMAT_VERSION


# -- corrupted checkpoints -------------------------------------------------------------------------------------
def edit_json(folder: Path, name: str, change) -> None:
    data = json.loads((folder / name).read_text())
    (folder / name).write_text(json.dumps(change(data)))


def edit_tensors(folder: Path, name: str, change) -> None:
    tensors = load_file(folder / name)
    change(tensors)
    save_file(tensors, folder / name)


def set_key(section: str, key: str, value):
    def change(data: dict) -> dict:
        (data[section] if section else data)[key] = value
        return data
    return change


def first(tensors: dict) -> str:
    return sorted(tensors)[0]


CORRUPTIONS = {
    "missing config": (lambda f: (f / "config.json").unlink(), "config.json: file is missing"),
    "missing model": (lambda f: (f / "model.safetensors").unlink(), "model.safetensors: file is missing"),
    "missing src tokenizer": (lambda f: (f / "src_tokenizer.json").unlink(), "src_tokenizer.json: file is missing"),
    "missing tgt tokenizer": (lambda f: (f / "tgt_tokenizer.json").unlink(), "tgt_tokenizer.json: file is missing"),
    "missing history": (lambda f: (f / "history.json").unlink(), "history.json: file is missing"),
    "missing optimizer tensors": (lambda f: (f / "optimizer.safetensors").unlink(),
                                  "optimizer.safetensors: file is missing"),
    "config not json": (lambda f: (f / "config.json").write_text("{not json"), "config.json: not a readable JSON"),
    "not our config": (lambda f: edit_json(f, "config.json", set_key("", "format", "other")),
                       "config.json: not an Attention Studio checkpoint"),
    "newer format": (lambda f: edit_json(f, "config.json", set_key("", "format_version", FORMAT_VERSION + 1)),
                     "config.json: format version 2 was written by a newer version"),
    "odd format": (lambda f: edit_json(f, "config.json", set_key("", "format_version", "1")),
                   "config.json: unknown format version"),
    "over the caps": (lambda f: edit_json(f, "config.json", set_key("model_config", "d_model", 4096)),
                      "config.json: d_model must be between"),
    "unknown config field": (lambda f: edit_json(f, "config.json", set_key("train_config", "momentum", 0.9)),
                             "config.json: unknown TrainConfig field"),
    "config bigger than the weights": (lambda f: edit_json(f, "config.json", set_key("model_config", "d_model", 1024)),
                                       "model.safetensors: tensor .* has shape .* but the model in config.json needs"),
    "bad step": (lambda f: edit_json(f, "config.json", set_key("", "step", -1)), "config.json: step must be"),
    "bad task spec": (lambda f: edit_json(f, "config.json", set_key("", "task_spec", {"name": "bogus"})),
                      "config.json: task_spec"),
    "tokenizer kind": (lambda f: edit_json(f, "config.json", set_key("tokenizers", "src", "word")),
                       "src_tokenizer.json: tokenizer kind is 'char'"),
    "pickle model": (None, "model.safetensors: not a valid safetensors file"),
    "truncated model": (lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:500]),
                        "model.safetensors: not a valid safetensors file"),
    "missing tensor": (lambda f: edit_tensors(f, "model.safetensors", lambda t: t.pop(first(t))),
                       "model.safetensors: missing tensor"),
    "extra tensor": (lambda f: edit_tensors(f, "model.safetensors", lambda t: t.update(extra=torch.zeros(2))),
                     r"model.safetensors: unexpected tensor\(s\) extra"),
    "wrong shape": (lambda f: edit_tensors(f, "model.safetensors", lambda t: t.update({first(t): torch.zeros(3)})),
                    "model.safetensors: tensor .* has shape \\[3\\]"),
    "nan weight": (lambda f: edit_tensors(f, "model.safetensors",
                                          lambda t: t[first(t)].view(-1).__setitem__(0, float("nan"))),
                   "model.safetensors: tensor .* contains NaN"),
    "integer weight": (lambda f: edit_tensors(f, "model.safetensors",
                                              lambda t: t.update({first(t): t[first(t)].long()})),
                       "model.safetensors: tensor .* has dtype I64"),
    "tokenizer of another kind": (lambda f: (f / "tgt_tokenizer.json").write_text(
        build_word_tokenizer(["a b c d e"]).to_json()),
                   "tgt_tokenizer.json: tokenizer kind is 'word'"),
    "tokenizer garbage": (lambda f: (f / "src_tokenizer.json").write_text('{"kind": "char"}'),
                          "src_tokenizer.json: tokenizer JSON must be"),
    "history not object": (lambda f: (f / "history.json").write_text("[1, 2]"), "history.json: expected an object"),
    "optimizer shape": (lambda f: edit_tensors(f, "optimizer.safetensors",
                                               lambda t: t.update({first(t): torch.zeros(1)})),
                        "optimizer.safetensors: tensor .* has shape \\[1\\]"),
    "optimizer groups": (lambda f: edit_json(f, "optimizer.json",
                                             lambda d: {**d, "param_groups": d["param_groups"][:1]}),
                         "optimizer.json: the parameter groups do not match"),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_corrupted_checkpoint_raises_one_clear_error_naming_the_file(copy: Path, corruption: str) -> None:
    corrupt, message = CORRUPTIONS[corruption]
    if corrupt is not None:
        corrupt(copy)
    else:
        (copy / "model.safetensors").write_bytes(pickle.dumps(_Payload(copy / "pwned")))
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(copy)
    assert not (copy / "pwned").exists()  # the pickle never ran


def test_tokenizer_with_the_wrong_vocabulary_size_is_refused(copy: Path) -> None:
    (copy / "tgt_tokenizer.json").write_text(build_char_tokenizer("abc").to_json())
    with pytest.raises(CheckpointError, match="tgt_tokenizer.json: vocabulary has 7 tokens but the model config"):
        load_checkpoint(copy)


class _Payload:
    """A pickle that would create a file if anything unpickled it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_missing_directory_or_a_file_is_a_checkpoint_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a checkpoint directory"):
        load_checkpoint(tmp_path / "nothing-here")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointError, match="not a checkpoint directory"):
        load_checkpoint(tmp_path / "file")


# -- run directories and names --------------------------------------------------------------------------------
def test_list_checkpoints_shows_only_complete_visible_runs(saved: Path, tmp_path: Path) -> None:
    for name in ("b-run", "a-run", ".a-run.tmp-x1"):
        shutil.copytree(saved, tmp_path / name)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    (tmp_path / "loose-file").write_text("x")
    assert [p.name for p in list_checkpoints(tmp_path)] == ["a-run", "b-run"]
    assert list_checkpoints(tmp_path / "missing") == []


@pytest.mark.parametrize("name", ["reverse", "my run 2", "de-en_v1.5", "A" * 64])
def test_valid_run_names(name: str) -> None:
    assert is_valid_run_name(name) is None


@pytest.mark.parametrize("name", ["", "   ", "a/b", "a\\b", "..", "x..y", ".hidden", "-flag", "A" * 65, "tab\there",
                                  "ünïcode", "trailing ", "trailing.", "semi;colon"])
def test_invalid_run_names_get_a_message(name: str) -> None:
    message = is_valid_run_name(name)
    assert isinstance(message, str) and message


def test_card_summarises_the_checkpoint(saved: Path) -> None:
    ckpt = load_checkpoint(saved)
    card = ckpt.card()
    assert card["name"] == "run" and card["task"] == "reverse" and card["level"] == "char"
    assert (card["d_model"], card["n_heads"], card["n_encoder_layers"], card["d_ff"]) == (16, 2, 1, 32)
    assert card["parameters"] == ckpt.model.num_parameters() and card["steps"] == 3
    assert set(card["metrics"]) >= {"loss", "token_accuracy", "exact_match"} and "examples" not in card["metrics"]


def test_unsaved_checkpoint_is_named_unsaved(trained: Trainer) -> None:
    assert checkpoint_from_trainer(trained).name == "unsaved"
