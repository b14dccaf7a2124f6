"""`python -m transformer reliance`: one sentence's steps as text and JSON, a corpus ranked, and one clear message for
a corpus file that is not text, a model without cross-attention or a missing input."""
from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT
from transformer.cli import main

REVERSE = str(ROOT / "checkpoints" / "reverse")


def test_reliance_prints_each_steps_source_and_prefix_shares(capsys):
    assert main(["reliance", REVERSE, "attention", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["output"] == "noitnetta"
    assert [s["step"] for s in out["steps"]] == list(range(1, len(out["steps"]) + 1))
    assert all(abs(s["source"] + s["prefix"] - 1) < 1e-3 for s in out["steps"])
    assert out["detached_steps"] == [] and out["source_tokens"][-1] == "</s>"
    assert main(["reliance", REVERSE, "attention"]) == 0
    text = capsys.readouterr().out
    assert "source share" in text and "   1 n" in text


def test_a_corpus_is_ranked_one_row_a_sentence(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("transformers\nhello\nabcdefghijk\n", encoding="utf-8")
    assert main(["reliance", REVERSE, "--corpus", str(corpus), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["sentences"]
    assert sorted(r["line"] for r in rows) == [1, 2, 3]
    scores = [r["wass_to_unif"] for r in rows]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("args, message", [
    (["--corpus", "BINARY"], "is binary, not text"),
    (["--corpus", "MISSING"], "no such file"),
    ([], "give TEXT or --corpus FILE"),
])
def test_bad_input_gets_one_clear_message(tmp_path, capsys, args, message):
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"abc\x00\xff\xfe")
    args = [{"BINARY": str(binary), "MISSING": str(tmp_path / "none.txt")}.get(a, a) for a in args]
    assert main(["reliance", REVERSE, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


def test_a_model_without_cross_attention_is_refused_in_one_line(capsys):
    assert main(["reliance", str(ROOT / "checkpoints" / "reverse-decoder-only"), "abc"]) == 2
    assert "no cross-attention" in capsys.readouterr().err
