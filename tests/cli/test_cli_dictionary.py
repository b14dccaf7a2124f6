"""`python -m transformer dictionary train|show` and `qk --dictionary`: a dictionary trained from the command line
is a SAELens folder the studio reads back, and the feature pairs plus terms of `qk --json` sum to the score the model
computed; bad input is one line and status 2."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

import pytest
import torch

from tests.helpers import ROOT
from transformer.analysis import decode_parts
from transformer.cli import main
from transformer.dictionaries import load_dictionary
from transformer.store import open_model

MODEL = "checkpoints/induction"
STREAM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
pytestmark = pytest.mark.slow  # trains (tiny) and starts processes; the dictionaries add nothing to `make test-fast`
TRAIN = ["dictionary", "train", MODEL, "--site", "resid:L2", "--features", "32", "--corpus-cap", "40", "--steps", "40",
         "--batch-size", "256", "--json"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[str, dict]:
    out, printed = str(tmp_path_factory.mktemp("dict") / "resid-L2"), io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*TRAIN, "--out", out]) == 0
    return out, json.loads(printed.getvalue())


def test_train_writes_a_folder_show_reads_it_back(trained: tuple[str, dict], capsys):
    trained, report = trained
    assert report["site"] == "resid:L2" and report["hook_name"] == "blocks.1.hook_resid_pre"
    assert report["features"] == 32 and 0 < report["explained_variance"] <= 1 and report["rows"] > 1000
    assert main(["dictionary", "show", trained, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["trained"] and shown["site"] == "resid:L2" and shown["d_in"] == 64
    assert shown["metrics"]["explained_variance"] == pytest.approx(report["explained_variance"])


def test_torchrun_trains_the_dictionary_one_process_trains_on_the_same_texts(trained: tuple[str, dict], tmp_path):
    # two processes (gloo on the CPU), each reading half the texts, gradients summed at every step: the same
    # dictionary as the one process of the fixture, to the float's rounding; rank 0 alone writes and prints
    out = tmp_path / "two"
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m",
                          "transformer", *TRAIN, "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    assert two.returncode == 0, two.stderr[-2000:]
    report = json.loads(two.stdout)  # one line: the other process prints nothing
    assert report["rows"] == trained[1]["rows"] and report["out"] == str(out)
    assert report["explained_variance"] == pytest.approx(trained[1]["explained_variance"], abs=1e-4)
    one, both = load_dictionary(trained[0]), load_dictionary(out)
    for name in ("w_enc", "b_enc", "w_dec", "b_dec"):
        torch.testing.assert_close(getattr(both, name), getattr(one, name), atol=1e-4, rtol=1e-4)


def test_qk_with_a_dictionary_sums_feature_pairs_and_terms_to_the_score(trained: tuple[str, dict], capsys):
    trained = trained[0]
    text = STREAM[:20] + STREAM[5:15]
    assert main(["qk", MODEL, text, "--head", "self:L2H1", "--query", "25", "--key", "11", "--dictionary", trained,
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["pairs"][0]) == {"query_feature", "key_feature", "contribution"}
    assert all(isinstance(p["query_feature"], int) and 0 <= p["key_feature"] < 32 for p in out["pairs"])
    total = sum(p["contribution"] for p in out["pairs"]) + sum(out["terms"].values())
    assert abs(total - out["score"]) <= 1e-4 * max(1.0, abs(out["score"]))
    parts = decode_parts(open_model(MODEL), text)
    assert out["score"] == pytest.approx(parts.capture.insides.inputs["self"][1].scores()[0, 0, 24, 10].item(),
                                         abs=1e-4)
    assert main(["qk", MODEL, text, "--head", "self:L1H1", "--query", "5", "--key", "2", "--dictionary",
                 trained]) == 2
    assert "reads resid:L1" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["train", MODEL, "--site", "resid:L9", "--features", "8", "--out", "x"], "layers 1-2"),
    (["train", MODEL, "--site", "mlp:L1", "--features", "8", "--out", "x"], "cannot read site"),
    (["train", MODEL, "--features", "8"], "needs --site"),
    (["show", "checkpoints"], "not a dictionary folder"),
])
def test_bad_input_is_one_line(args, message, capsys):
    assert main(["dictionary", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
