"""Robustness matrix, command line: each bad input of the issue ends in one `error:` line and exit status 2
(or, for text the model can still read, a warning), never a traceback, and nothing the user supplied runs.

Most cases call `transformer.cli.main` in this process (the code `python -m transformer` runs); the cases
where only a real process can show it (a pickle must not execute, no traceback reaches the terminal) spawn one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.hostile_inputs import (
    BROKEN_CHECKPOINTS,
    CORPORA,
    TEXTS,
    WORD_PAIRS,
    broken_checkpoint,
    build_word_checkpoint,
    write_corpus,
)
from transformer.cli import main
from transformer.cli.common import printable
from transformer.store import load_checkpoint
from transformer.train import Trainer

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
TINY = ["--task", "reverse", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--batch-size", "16",
        "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--warmup", "2", "--schedule", "constant"]


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of `python -m transformer *argv` (run in this process)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_process(*argv: str) -> subprocess.CompletedProcess:
    """`python -m transformer *argv` in a real child process."""
    return subprocess.run([sys.executable, "-m", "transformer", *argv], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=300)


def assert_refused(code: int, out: str, err: str, message: str) -> None:
    """Exit 2, nothing on stdout, exactly one stderr line: `error: ...` containing `message`."""
    assert code == 2, err
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert message in err, err


@pytest.fixture(scope="module")
def good(tiny_checkpoint_dir: Path) -> Path:
    return tiny_checkpoint_dir / "reverse"


# -- text ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(TEXTS))
def test_decode_text(case: str, good: Path, capsys: pytest.CaptureFixture) -> None:
    hostile = TEXTS[case]
    code, out, err = run_cli(capsys, "decode", str(good), hostile.text)
    if hostile.refused is not None:
        assert_refused(code, out, err, hostile.refused)
    else:
        assert code == 0, err
        assert out.count("\n") == 1  # the output, nothing else
        warning = next(line for line in err.splitlines() if line.startswith("warning: not in the vocabulary"))
        assert printable(hostile.unknown) in warning
        assert warning.isprintable()  # control and right-to-left characters are escaped for the terminal


def test_words_outside_the_vocabulary_are_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = build_word_checkpoint(tmp_path / "words")
    code, out, err = run_cli(capsys, "decode", str(folder), "ich mochte ein zebra")
    assert code == 0, err
    assert "warning: not in the vocabulary (read as <unk>): zebra" in err


@pytest.mark.slow  # a real process or a full evaluation
def test_very_long_text_in_a_real_process(good: Path) -> None:
    result = run_process("decode", str(good), "y" * 120_000)  # one argument holds at most 128 KiB on Linux
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: The input has 120,000 characters; this model reads at most ")
    assert result.stderr.endswith(" tokens (its own context), so at most 768 characters.\n")  # derived: 24 x 32


# -- checkpoints -----------------------------------------------------------------------------------------------
COMMANDS = {
    "decode": lambda folder, out: ["decode", str(folder), "abc"],
    "eval": lambda folder, out: ["eval", str(folder)],
    "train --resume": lambda folder, out: ["train", "--resume", str(folder), "--steps", "9", "--out", str(out)],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(BROKEN_CHECKPOINTS))
def test_broken_checkpoint(case: str, command: str, good: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture) -> None:
    folder = broken_checkpoint(good, case, tmp_path)
    code, out, err = run_cli(capsys, *COMMANDS[command](folder, tmp_path / "out"))
    assert_refused(code, out, err, BROKEN_CHECKPOINTS[case][1])
    assert not (tmp_path / "PWNED").exists()  # nothing in the file was executed
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a real process or a full evaluation
def test_a_pickle_disguised_as_weights_never_runs_in_a_real_process(good: Path, tmp_path: Path) -> None:
    folder = broken_checkpoint(good, "pickle disguised as model.safetensors", tmp_path)
    result = run_process("decode", str(folder), "abc")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {folder}/model.safetensors: not a valid safetensors file")
    assert not (tmp_path / "PWNED").exists()


def test_a_missing_checkpoint_directory(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, out, err = run_cli(capsys, "decode", str(tmp_path / "nowhere"), "abc")
    assert_refused(code, out, err, "not a checkpoint directory")


# -- corpora -------------------------------------------------------------------------------------------------------
def test_eval_of_a_corpus_model_whose_files_stayed_on_another_machine(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    """A shipped corpus model names the files it was trained on; where they are absent, eval says how to score it."""
    (tmp_path / "pairs.tsv").write_text(WORD_PAIRS + "\n", encoding="utf-8")
    out = tmp_path / "model"
    code, _, err = run_cli(capsys, "train", "--task", "corpus", "--data", str(tmp_path / "pairs.tsv"),
                           "--tokenizer", "word", "--steps", "1", "--d-model", "16", "--heads", "2",
                           "--enc-layers", "1", "--dec-layers", "1", "--d-ff", "32", "--out", str(out))
    assert code == 0, err
    (tmp_path / "pairs.tsv").rename(tmp_path / "elsewhere.tsv")
    code, stdout, err = run_cli(capsys, "eval", str(out))
    assert_refused(code, stdout, err, "was trained on corpus files that are not on this machine")
    assert "pairs.tsv" in err and "--data SRC TGT" in err
    (tmp_path / "en.txt").write_text("ich mochte ein bier\n", encoding="utf-8")
    (tmp_path / "de.txt").write_text("i want a beer\n", encoding="utf-8")
    code, stdout, err = run_cli(capsys, "eval", str(out), "--data", str(tmp_path / "en.txt"), str(tmp_path / "de.txt"))
    assert code == 0, err
    assert "bleu" in json.loads(stdout)


@pytest.mark.parametrize("case", list(CORPORA))
def test_bad_corpus(case: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    paths = write_corpus(case, tmp_path)
    out = tmp_path / "out"
    code, stdout, err = run_cli(capsys, "train", "--task", "corpus", "--data", *map(str, paths), "--steps", "1",
                                "--out", str(out))
    assert_refused(code, stdout, err, CORPORA[case][1])
    assert paths[0].name in err  # the message names the user's file
    assert not out.exists()


@pytest.mark.parametrize("content, message", [
    ("ich bin -> i am\nça va -> it goes\n".encode("latin-1"), "not valid UTF-8 text (byte 0xe7 at offset 16)"),
    (b"ich bin -> i am\njust one column\n", "line 2: expected 'source"),
    (b"\n\n", "no sentence pairs found"),
], ids=["not UTF-8", "single column", "empty"])
def test_bad_typed_pairs_file(content: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "pairs.txt").write_bytes(content)
    code, out, err = run_cli(capsys, "train", "--task", "corpus", "--text-file", str(tmp_path / "pairs.txt"),
                             "--steps", "1", "--out", str(tmp_path / "out"))
    assert_refused(code, out, err, message)


@pytest.mark.slow  # a real process or a full evaluation
def test_a_corpus_that_is_not_utf8_in_a_real_process(tmp_path: Path) -> None:
    paths = write_corpus("not UTF-8", tmp_path)
    result = run_process("train", "--task", "corpus", "--data", str(paths[0]), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == f"error: {paths[0]}, line 2: not valid UTF-8 text (byte 0xe7 at column 1)\n"


# -- hyperparameters ---------------------------------------------------------------------------------------------
HYPERPARAMETERS = {
    "zero heads": (["--heads", "0"], "n_heads must be between 1 and 32, got 0"),
    "d_model not divisible by heads": (["--d-model", "30", "--heads", "4"],
                                       "d_model (30) must be divisible by n_heads (4)"),
    "absurd d_model": (["--d-model", "10000000"], "d_model must be between 1 and 1024, got 10000000"),
    "steps over the cap": (["--steps", "2000000"], "max_steps must be between 1 and 1000000"),
    "time budget over the cap": (["--max-seconds", "1e9"], "max_seconds must be between 0.1 and 86400"),
    "batch over the cap": (["--batch-size", "100000"], "batch_size must be between 1 and 4096"),
    "learning rate over the cap": (["--lr", "100"], "lr must be between 1e-08 and 10.0, got 100"),
    "learning rate NaN": (["--lr", "nan"], "lr must be between 1e-08 and 10.0, got nan"),
}


@pytest.mark.parametrize("case", list(HYPERPARAMETERS))
def test_bad_hyperparameters(case: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    flags, message = HYPERPARAMETERS[case]
    code, out, err = run_cli(capsys, "train", *TINY, *flags, "--out", str(tmp_path / "out"))
    assert_refused(code, out, err, message)
    assert not (tmp_path / "out").exists()


def test_a_non_finite_loss_stops_training_and_saves_the_last_good_weights(tmp_path: Path, monkeypatch,
                                                                          capsys: pytest.CaptureFixture) -> None:
    """The loss of step 5 is made NaN (Adam + LayerNorm will not diverge on their own within the lr cap)."""
    code, _, err = run_cli(capsys, "train", *TINY, "--steps", "3", "--out", str(tmp_path / "three"))
    assert code == 0, err
    real_loss = Trainer.loss

    def nan_at_step_5(self: Trainer, batch):
        loss, correct = real_loss(self, batch)
        return (loss * float("nan"), correct) if self.step == 4 else (loss, correct)

    monkeypatch.setattr(Trainer, "loss", nan_at_step_5)
    out = tmp_path / "diverged"
    code, stdout, err = run_cli(capsys, "train", *TINY, "--steps", "10", "--out", str(out))
    assert code == 2
    assert stdout.startswith(f"saved {out}: reverse, step 4 (loss not finite)")
    assert err.splitlines()[-1].startswith("error: the loss became nan at step 5; training stopped and the weights "
                                           "of the last finite step were kept")
    kept, reference = load_checkpoint(out).model.state_dict(), load_checkpoint(tmp_path / "three").model.state_dict()
    assert all(torch.isfinite(t).all() for t in kept.values())
    assert all(torch.equal(kept[name], reference[name]) for name in reference)  # the weights step 5 started from


# -- names -------------------------------------------------------------------------------------------------------
def test_an_existing_output_is_never_silently_replaced(good: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    before = {p.name: p.read_bytes() for p in good.iterdir()}
    code, out, err = run_cli(capsys, "train", *TINY, "--steps", "1", "--out", str(good))
    assert_refused(code, out, err, "already exists; use --force")
    assert {p.name: p.read_bytes() for p in good.iterdir()} == before
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")
    code, out, err = run_cli(capsys, "train", *TINY, "--steps", "1", "--out", str(tmp_path / "notes"), "--force")
    assert_refused(code, out, err, "exists and is not a checkpoint directory")
    assert (tmp_path / "notes" / "todo.txt").read_text() == "keep me"
