"""`python -m transformer qk`: one score taken apart, as JSON or a table, its pairs and terms summing to the score
the model computed; bad input (a head or position that is not there, a hidden key) is one line and status 2."""
from __future__ import annotations

import json

import pytest

from transformer.analysis import decode_parts
from transformer.cli import main
from transformer.store import open_model

MODEL = "checkpoints/reverse"
TEXT = "abcdef"


def _json(capsys, *args: str) -> dict:
    assert main(["qk", MODEL, TEXT, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_pairs_and_terms_sum_to_the_models_score(capsys):
    out = _json(capsys, "--head", "cross:L1H1", "--query", "2", "--key", "3")
    assert set(out) >= {"score", "pairs", "terms"}
    total = sum(p["contribution"] for p in out["pairs"]) + sum(out["terms"].values())
    assert abs(total - out["score"]) <= 1e-4 * max(1.0, abs(out["score"]))
    assert out["key_token"] == "c" and out["query"] == 2
    assert {p["key_part"] for p in out["pairs"]} >= {"embed", "pos", "bias", "enc:L1H1", "enc:L1.mlp"}
    parts = decode_parts(open_model(MODEL), TEXT)
    s = parts.capture.insides.inputs["cross"][0].scores()[0, 0, 1, 2].item()
    assert out["score"] == pytest.approx(s, abs=1e-4)


def test_step_picks_the_query_that_produces_that_output(capsys):
    by_step = _json(capsys, "--head", "dec:L1H2", "--step", "3", "--key", "1")
    by_query = _json(capsys, "--head", "dec:L1H2", "--query", "3", "--key", "1")
    assert by_step["query"] == 3 and by_step["score"] == pytest.approx(by_query["score"], abs=1e-5)


def test_encoder_heads_and_the_table(capsys):
    assert main(["qk", MODEL, TEXT, "--head", "enc:L1H2", "--query", "1", "--key", "6"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("enc:L1H2  query 1 'a'  key 6 'f'") and "query part" in out and "by key part" in out


@pytest.mark.parametrize(("args", "says"), [
    (["--head", "cross:L9H1", "--query", "1", "--key", "1"], "no head cross:L9H1"),
    (["--head", "self:L1H1", "--query", "1", "--key", "1"], "no self heads"),
    (["--head", "cross:L1H1", "--query", "1", "--key", "99"], "key position 99 is outside"),
    (["--head", "dec:L1H1", "--query", "1", "--key", "3"], "hidden from query 1 by the mask"),
    (["--head", "dec:L1H1", "--step", "99", "--key", "1"], "step 99 does not exist"),
    (["--head", "cross:L1H1", "--key", "1"], "--query I is needed"),
    (["--head", "nonsense", "--query", "1", "--key", "1"], "cannot read head"),
])
def test_bad_input_is_one_line(capsys, args, says):
    assert main(["qk", MODEL, TEXT, *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
