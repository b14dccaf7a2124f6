"""`python -m transformer circuit`: one JSON object (every edge signed, the curve, the circuit) that agrees with the
library and the notebook; a table; bad input is one line on stderr and status 2."""
from __future__ import annotations

import json

import pytest

from transformer import notebook
from transformer.cli import main
from transformer.decode import InputError

pytestmark = pytest.mark.slow
MODEL = "checkpoints/reverse"


def test_json_lists_every_edge_and_the_circuit_the_curve_finds(capsys):
    assert main(["circuit", MODEL, "abcdefghij", "abcdefghik", "--method", "eap", "--top", "3", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "circuit:" in captured.err  # progress goes to stderr
    assert len(out["edges"]) == out["n_edges"] > 3 and out["method"] == "eap" and out["step"] == 1
    assert out["answer"] == "j" and out["contrast"] == "k"
    assert all(set(r) == {"from", "to", "input", "score"} for r in out["edges"])
    curve = {p["n"]: p["value"] for p in out["faithfulness"]}
    assert out["reached"] and curve[out["circuit_size"]] >= 0.8 and len(out["circuit"]) == out["circuit_size"]
    assert curve[0] == 0.0 and curve[out["n_edges"]] == pytest.approx(1.0, abs=1e-5)
    ranked = sorted(out["edges"], key=lambda r: -abs(r["score"]))
    assert out["circuit"] == ranked[:out["circuit_size"]]
    again = notebook.circuit(MODEL, "abcdefghij", "abcdefghik", method="eap").as_json()
    assert again["edges"] == out["edges"] and again["circuit"] == out["circuit"]


def test_the_table_names_the_target_and_the_top_edges(capsys):
    assert main(["circuit", MODEL, "abcdefghij", "abcdefghik", "--method", "eap", "--top", "4"]) == 0
    text = capsys.readouterr().out
    assert "at output token 1" in text and "top 4 of" in text and "the smallest circuit that reaches 0.8" in text


@pytest.mark.parametrize("corrupted, said", [("abcdefghij", "reads the same"), ("", "is empty")])
def test_bad_input_is_one_line(corrupted: str, said: str, capsys):
    assert main(["circuit", MODEL, "abcdefghij", corrupted]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "\n" not in err
    with pytest.raises(InputError, match=said):
        notebook.circuit(MODEL, "abcdefghij", corrupted)
