"""`python -m transformer composition`: every pair as JSON equal to the library's scores, the strongest pairs as a
table; a model in which no head reads another's output is one line and status 2."""
from __future__ import annotations

import json

import pytest

from tests.helpers.hf_causal_models import SIZE, build
from transformer.analysis import composition_scores
from transformer.cli import main
from transformer.store import open_model

MODEL = "checkpoints/reverse"


def test_json_lists_every_pair_as_the_library_scores_it(capsys):
    assert main(["composition", MODEL, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    frame = composition_scores(open_model(MODEL))
    assert len(rows) == len(frame) and set(rows[0]) == {"from", "to", "q", "k", "v"}
    across = next(r for r in rows if r["from"].startswith("enc:") and r["to"].startswith("cross:"))
    assert across["q"] is None and across["k"] == pytest.approx(
        float(frame[(frame["from"] == across["from"]) & (frame["to"] == across["to"])]["k"].iloc[0]))


def test_the_table_names_the_strongest_pairs_of_each_type(capsys):
    assert main(["composition", MODEL, "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "K-composition, strongest:" in out and "Q-composition" in out and " -> cross:L1H" in out


def test_one_attention_layer_is_one_line(capsys, tmp_path):
    one_layer = build("gpt2", tmp_path / "gpt2", size={**SIZE, "layers": 1})
    capsys.readouterr()  # the build's progress bars
    assert main(["composition", str(one_layer)]) == 2
    err = capsys.readouterr().err
    assert "no head reads another head's output" in err and err.count("\n") == 1
