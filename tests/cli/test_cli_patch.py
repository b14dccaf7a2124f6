"""`python -m transformer patch`: the recoveries as JSON or a table, checked against the library; bad input is one
line on stderr and status 2."""
from __future__ import annotations

import json

import pytest

from transformer.analysis import ENCODER_OUTPUT, patch_sites, prepare_patching
from transformer.cli import main
from transformer.store import open_model

MODEL = "checkpoints/reverse"


def test_json_holds_each_site_and_matches_the_library(capsys):
    assert main(["patch", MODEL, "abcdefghijkl", "abcdefxhijkl", "--contrast", "x", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step"] == 6 and out["shows"] == "recovery" and not out["barely_moves"]
    encoder = [r for r in out["sites"] if r["site"] == ENCODER_OUTPUT]
    best = max(encoder, key=lambda r: r["recovery"])
    assert best["token"] == "g" and best["position"] == 6
    adapter = open_model(MODEL)
    frame = patch_sites(adapter, prepare_patching(adapter, "abcdefghijkl", "abcdefxhijkl", contrast="x"),
                        [ENCODER_OUTPUT]).frame
    assert best["recovery"] == pytest.approx(float(frame["recovery"].max()), abs=1e-6)
    assert {r["site"] for r in out["sites"]} == {"encoder output", "head", "residual"}


def test_the_table_names_the_target_and_each_site(capsys):
    assert main(["patch", MODEL, "abcdefghijkl", "abcdefxhijkl", "--step", "6", "--sites", "encoder,heads"]) == 0
    text = capsys.readouterr().out
    assert "target: output token 6 'g'" in text
    assert "encoder output by source position (recovery)" in text and "cross heads" in text


def test_the_estimate_reports_its_agreement_with_the_exact_top_ten(capsys):
    assert main(["patch", MODEL, "abcdefghijkl", "abcdefxhijkl", "--contrast", "x", "--estimate", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["exact"]) == 10 and -1.0 <= out["spearman_vs_exact"] <= 1.0


@pytest.mark.parametrize("argv, message", [
    (["abcdef", "abcdef"], "reads the same"),
    (["abcdef", "abcxef", "--step", "40"], "past the end"),
    (["abcdef", "abcxef", "--contrast", "nope"], "not one output token"),
    (["abcdef", "abcxef", "--sites", "everything"], "not a site"),
])
def test_bad_input_is_one_line_and_status_2(capsys, argv, message):
    assert main(["patch", MODEL, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and err.count("\n") == 1


def test_the_notebook_patches_with_one_line_errors():
    from transformer.decode import InputError
    from transformer.notebook import load, patch
    result = patch(load(MODEL), "abcdefghijkl", "abcdefxhijkl", step=6, contrast="x", sites=(ENCODER_OUTPUT,))
    best = result.frame.sort_values("recovery", ascending=False).iloc[0]
    assert best["token"] == "g" and best["recovery"] >= 0.8
    assert result.summary()["step"] == 6
    with pytest.raises(InputError, match="reads the same"):
        patch(MODEL, "abcdef", "abcdef")
