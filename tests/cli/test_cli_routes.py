"""`python -m transformer routes`: each step's route as JSON (its edges above the threshold, the cross-attention edge
to the mirrored source position on the reversal model) or a table; bad input is one line and status 2."""
from __future__ import annotations

import json

import pytest

from transformer.cli import main

MODEL = "checkpoints/reverse"
TEXT = "abcdefghij"


def test_json_of_one_step_keeps_edges_above_the_threshold(capsys):
    assert main(["routes", MODEL, TEXT, "--step", "2", "--threshold", "0.1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step"] == 2 and out["token"] == "i" and out["threshold"] == 0.1
    assert all(e["importance"] > 0.1 for e in out["edges"])
    cross = max((e for e in out["edges"] if e["via"].startswith("cross:")), key=lambda e: e["importance"])
    assert cross["from"] == "enc:L1@9"  # 'i', the mirrored source position


def test_every_step_without_step_and_the_table(capsys):
    assert main(["routes", MODEL, TEXT, "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in steps] == list(range(1, 12))
    assert main(["routes", MODEL, TEXT, "--step", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("step 1 'j'") and "via cross:L1H" in out


@pytest.mark.parametrize(("args", "says"), [(["--step", "99"], "step 99 does not exist"),
                                            (["--threshold", "2"], "must be at least 0 and below 1")])
def test_bad_input_is_one_line(capsys, args, says):
    assert main(["routes", MODEL, TEXT, *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_an_encoder_only_model_has_no_steps(capsys):
    assert main(["routes", "checkpoints/toy-en-de-encoder-only", "a dog"]) == 2
    assert "encoder-only" in capsys.readouterr().err
