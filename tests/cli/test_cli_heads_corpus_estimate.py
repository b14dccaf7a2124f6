"""`heads MODEL --corpus FILE --estimate [--estimate-sentences N]`: beside the statistics, the one-pass ablation
estimate averaged per head over the corpus's first N sentences, N stated in the JSON (`estimate.sentences`, `first`)
and in the text table's line above the `estimate` column; the values are `analysis.corpus_estimate`'s."""
from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT
from transformer.analysis import corpus_estimate
from transformer.cli import main
from transformer.store import open_model

REVERSE = str(ROOT / "checkpoints" / "reverse")
SENTENCES = ["tkgnkuhmpxnhtqgx", "pvissbxfud", "xisxrmclpxzmwguoask", "abcdefg", "qqqzz"]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return str(path)


def test_the_json_carries_the_estimate_over_the_first_sentences(corpus, capsys):
    assert main(["heads", REVERSE, "--corpus", corpus, "--estimate", "--estimate-sentences", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    block = data["estimate"]
    assert (block["sentences"], block["first"], block["mode"], block["skipped"]) == (3, 3, "greedy", [])
    assert data["sentences"] == 5  # the statistics read the whole corpus
    want = corpus_estimate(open_model(REVERSE), SENTENCES, n=3).frame
    got = {h["label"]: h["estimate"] for h in block["heads"]}
    assert set(got) == set(want["label"])
    for label, value in zip(want["label"], want["estimate"], strict=True):
        assert got[label] == pytest.approx(float(value), abs=1e-5), label


def test_the_text_table_has_an_estimate_column_and_says_over_how_many(corpus, capsys):
    assert main(["heads", REVERSE, "--corpus", corpus, "--estimate", "--estimate-sentences", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any("mean over the corpus's first 2 sentences" in line for line in out)
    header = next(line for line in out if line.startswith("head"))
    assert header.rstrip().endswith("estimate")
    want = corpus_estimate(open_model(REVERSE), SENTENCES, n=2).frame.set_index("label")["estimate"]
    rows = [line.split() for line in out if line.split() and line.split()[0] in want.index]
    assert len(rows) == len(want)
    for row in rows:
        assert float(row[-1]) == pytest.approx(float(want[row[0]]), abs=1e-3), row[0]


def test_without_estimate_the_json_has_none(corpus, capsys):
    assert main(["heads", REVERSE, "--corpus", corpus, "--json"]) == 0
    assert "estimate" not in json.loads(capsys.readouterr().out)


def test_an_encoder_only_model_says_in_one_line(corpus, capsys):
    code = main(["heads", str(ROOT / "checkpoints" / "toy-en-de-encoder-only"), "--corpus", corpus, "--estimate"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "writes no output to estimate against" in err
    assert err.count("\n") == 1
