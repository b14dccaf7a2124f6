"""`eval DIR --save`: a checkpoint's fresh validation metrics stored as its card's (config.json rewritten, nothing
else): how build.sh refreshes the shipped stream models' cards without retraining them."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers import ROOT
from transformer.cli import main
from transformer.store import load_checkpoint

RECALL = ROOT / "checkpoints" / "recall"
pytestmark = pytest.mark.skipif(not (RECALL / "config.json").exists(), reason="checkpoints/recall not shipped")


@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / "recall"
    shutil.copytree(RECALL, folder)
    config = json.loads((folder / "config.json").read_text())
    config["metrics"] = {"n": 1, "loss": 9.0, "token_accuracy": 0.0, "exact_match": 0.0, "step": 0}  # stale
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_eval_save_stores_the_printed_metrics_and_touches_nothing_else(copy, capsys):
    before = {p.name: p.read_bytes() for p in copy.iterdir() if p.name != "config.json"}
    config_before = json.loads((copy / "config.json").read_text())
    (copy / "config.json").chmod(0o644)
    assert main(["eval", str(copy), "--n", "20", "--save"]) == 0
    printed = json.loads(capsys.readouterr().out)
    config = json.loads((copy / "config.json").read_text())
    assert (copy / "config.json").stat().st_mode & 0o777 == 0o644  # still readable by others
    saved = config.pop("metrics")
    assert config == {k: v for k, v in config_before.items() if k != "metrics"}
    # the weights and every other file as they were, and no temporary file left
    assert {p.name: p.read_bytes() for p in copy.iterdir() if p.name != "config.json"} == before
    assert saved["step"] == printed["step"] == config["step"] and saved["n"] == 20
    assert {k: saved[k] for k in ("loss", "token_accuracy", "exact_match", "determined_accuracy")} == {
        k: printed[k] for k in ("loss", "token_accuracy", "exact_match", "determined_accuracy")}
    assert len(saved["examples"]) == 5  # as the trainer saves its evaluation
    card = load_checkpoint(copy, load_optimizer=False).card()["metrics"]
    assert card["determined_accuracy"] == printed["determined_accuracy"] >= 0.9


@pytest.mark.parametrize("flags", [["--beam", "2"], ["--data", "a.txt", "b.txt"], ["--text-file", "a.txt"]])
def test_eval_save_refuses_what_is_not_the_checkpoints_greedy_evaluation(copy, capsys, flags):
    before = (copy / "config.json").read_bytes()
    assert main(["eval", str(copy), "--save", *flags]) == 2
    assert "--save" in capsys.readouterr().err
    assert (copy / "config.json").read_bytes() == before
