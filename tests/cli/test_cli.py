"""`python -m transformer`: train -> eval -> decode round trip, resume, Ctrl-C, and one-line user errors."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.cli_main import in_process
from transformer.adapters import adapter_for
from transformer.cli import main
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint
from transformer.train import NonFiniteLossError, Trainer

TINY = ["--task", "reverse", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--batch-size", "16",
        "--n-train", "500", "--n-valid", "20", "--eval-examples", "20", "--warmup", "5"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transformer", *args], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("cli") / "rev"
    result = cli("train", *TINY, "--steps", "30", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out, result


@pytest.mark.slow  # a real process or a full evaluation
def test_train_shows_progress_saves_and_prints_a_summary(trained) -> None:
    out, result = trained
    assert result.stdout.count("\n") == 1 and result.stdout.startswith(f"saved {out}: reverse, step 30")
    assert "step 30/30" in result.stderr and "loss" in result.stderr
    ckpt = load_checkpoint(out)
    assert ckpt.step == 30 and ckpt.model_config.d_model == 16 and len(ckpt.history) == 30
    assert {"loss", "token_accuracy", "exact_match"} <= set(ckpt.metrics)


@pytest.mark.slow  # a real process or a full evaluation
def test_eval_prints_one_json_object_with_the_metrics(trained) -> None:
    out, _ = trained
    result = in_process("eval", str(out), "--n", "10")
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout)
    assert {"exact_match", "token_accuracy", "loss", "n"} <= set(metrics)
    assert metrics["n"] == 10 and metrics["step"] == 30
    assert 0.0 <= metrics["token_accuracy"] <= 1.0


@pytest.mark.slow  # a real process or a full evaluation
def test_decode_prints_the_greedy_output_and_writes_the_trace(trained, tmp_path: Path) -> None:
    out, _ = trained
    trace_path = tmp_path / "trace.json"
    result = in_process("decode", str(out), "abcdef", "--top-k", "3", "--trace-json", str(trace_path), "--verbose")
    assert result.returncode == 0, result.stderr
    ckpt = load_checkpoint(out)
    expected = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), "abcdef", top_k=3)
    assert result.stdout == expected.output_text + "\n"
    trace = json.loads(trace_path.read_text())
    assert {"source_tokens", "target_tokens", "output_tokens", "steps", "attention"} <= set(trace)
    assert trace["source_tokens"] == [*"abcdef", "</s>"] and trace["target_tokens"][0] == "<s>"
    s, t = len(trace["source_tokens"]), len(trace["target_tokens"])
    shapes = {"encoder_self": (1, 2, s, s), "decoder_self": (1, 2, t, t), "cross": (1, 2, t, s)}
    for kind, (layers, heads, queries, keys) in shapes.items():
        weights = trace["attention"][kind]
        assert len(weights) == layers and all(len(layer) == heads for layer in weights)
        heads_of = [head for layer in weights for head in layer]
        assert all(len(head) == queries and all(len(row) == keys for row in head) for head in heads_of)
    assert len(trace["steps"]) == len(trace["output_tokens"]) == t
    assert all(len(step["top_k"]) == 3 for step in trace["steps"])
    assert sum("top:" in line for line in result.stderr.splitlines()) == t


@pytest.mark.slow  # a real process or a full evaluation
def test_decode_with_a_reference_shows_the_reference_on_the_decoder_axis(trained, tmp_path: Path) -> None:
    out, _ = trained
    trace_path = tmp_path / "trace.json"
    result = in_process("decode", str(out), "abcdef", "--reference", "fedcba", "--trace-json", str(trace_path))
    assert result.returncode == 0, result.stderr
    assert json.loads(trace_path.read_text())["target_tokens"] == ["<s>", *"fedcba"]


@pytest.mark.slow  # a real process or a full evaluation
def test_resume_continues_the_step_count_and_the_learning_rate_schedule(trained, tmp_path: Path) -> None:
    out, _ = trained
    first = in_process("train", *TINY, "--steps", "12", "--out", str(tmp_path / "half"))
    assert first.returncode == 0, first.stderr
    resumed = in_process("train", "--resume", str(tmp_path / "half"), "--steps", "30", "--out", str(tmp_path / "full"))
    assert resumed.returncode == 0, resumed.stderr
    assert "from step 12 to 30" in resumed.stderr
    ckpt, uninterrupted = load_checkpoint(tmp_path / "full"), load_checkpoint(out)
    assert ckpt.step == 30 and [h["step"] for h in ckpt.history] == list(range(1, 31))
    assert [h["lr"] for h in ckpt.history[12:]] == [h["lr"] for h in uninterrupted.history[12:]]
    assert all(float(s["step"]) == 30 for s in ckpt.optimizer_state["state"].values())


@pytest.mark.slow  # a real process or a full evaluation
def test_ctrl_c_stops_training_and_saves_what_was_trained(tmp_path: Path) -> None:
    out = tmp_path / "interrupted"
    proc = subprocess.Popen([sys.executable, "-m", "transformer", "train", *TINY, "--steps", "100000",
                             "--out", str(out)], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = iter(proc.stderr.readline, "")
        assert any("Ctrl-C stops and saves" in line for line in lines)  # the handler is in place from here on
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "(stopped)" in stdout and "Traceback" not in stderr
    assert 0 <= load_checkpoint(out).step < 100000


def test_diverging_training_saves_the_last_finite_weights_and_reports_it(tmp_path: Path, monkeypatch,
                                                                         capsys: pytest.CaptureFixture) -> None:
    real_step = Trainer.train_step

    def diverge_at_step_3(self: Trainer):
        if self.step == 2:
            raise NonFiniteLossError("the loss became nan at step 3; try a lower learning rate")
        return real_step(self)

    monkeypatch.setattr(Trainer, "train_step", diverge_at_step_3)
    out = tmp_path / "diverged"
    assert main(["train", *TINY, "--steps", "10", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith(f"saved {out}: reverse, step 2 (loss not finite)")
    assert captured.err.splitlines()[-1] == "error: the loss became nan at step 3; try a lower learning rate"
    assert load_checkpoint(out).step == 2


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint `train` saved in this process (TINY, thirty steps, as `trained`): what the user-error cases
    need, without the real process `trained` starts."""
    out = tmp_path_factory.mktemp("cli_saved") / "rev"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["train", *TINY, "--steps", "30", "--out", str(out)]) == 0
    return out


@pytest.fixture
def broken(saved: Path, tmp_path: Path) -> Path:
    copy = Path(shutil.copytree(saved, tmp_path / "broken"))
    (copy / "config.json").write_text("{oops")
    return copy


def bad_commands(trained: Path, broken: Path, tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    (tmp_path / "one-column.tsv").write_text("just one column\n")
    small = [*TINY[:-6], "--n-valid", "5", "--out", str(tmp_path / "new")]
    return {
        "unknown task": (["train", "--task", "nope", "--out", str(tmp_path / "x")], "invalid choice: 'nope'"),
        "existing out": (["train", *TINY, "--out", str(trained)], "already exists; use --force"),
        "bad sizes": (["train", *small, "--d-model", "30", "--heads", "4"], "must be divisible by n_heads"),
        "bad lr": (["train", *small, "--lr", "-1"], "lr must be between"),
        "not a number": (["train", *small, "--lr", "fast"], "invalid float value: 'fast'"),
        "zero steps": (["train", *small, "--steps", "0"], "must be a positive integer"),
        "missing data": (["train", "--task", "corpus", "--data", str(tmp_path / "nope.tsv"),
                          "--out", str(tmp_path / "c")], "nope.tsv: cannot open file"),
        "bad data": (["train", "--task", "corpus", "--data", str(tmp_path / "one-column.tsv"),
                      "--out", str(tmp_path / "c")], "line 1: expected 'source\ttarget'"),
        "data for generated task": (["train", *small, "--data", "x.tsv"], "are for --task corpus"),
        "no task": (["train", "--out", str(tmp_path / "x")], "train needs --task"),
        "resume changes model": (["train", "--resume", str(trained), "--d-model", "64", "--out", str(tmp_path / "r")],
                                 "drop --d-model"),
        "resume broken": (["train", "--resume", str(broken), "--out", str(tmp_path / "r")],
                          "config.json: not a readable JSON file"),
        "eval missing": (["eval", str(tmp_path / "missing")], "not a checkpoint directory"),
        "decode empty": (["decode", str(trained), "  "], "The input is empty"),
        "decode too long": (["decode", str(trained), "a" * 100], "reads at most 63"),
        "decode unwritable trace": (["decode", str(trained), "abc", "--trace-json", str(tmp_path / "no" / "t.json")],
                                    "cannot write"),
        "decode top-k": (["decode", str(trained), "abc", "--top-k", "0"], "must be a positive integer"),
        "no command": ([], "required"),
    }


CASES = ["unknown task", "existing out", "bad sizes", "bad lr", "not a number", "zero steps", "missing data",
         "bad data", "data for generated task", "no task", "resume changes model", "resume broken", "eval missing",
         "decode empty", "decode too long", "decode unwritable trace", "decode top-k", "no command"]


@pytest.mark.parametrize("case", CASES)
def test_user_errors_exit_2_with_one_line(case: str, saved: Path, broken: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture) -> None:
    argv, message = bad_commands(saved, broken, tmp_path)[case]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    assert message in captured.err
    assert captured.out == ""


@pytest.mark.slow  # a real process or a full evaluation
@pytest.mark.parametrize("argv", [["decode", "{broken}", "abc"], ["train", "--task", "sort", "--out", "{broken}"]])
def test_user_errors_from_the_real_process_have_no_traceback(argv: list[str], broken: Path) -> None:
    result = cli(*(a.format(broken=broken) for a in argv))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
