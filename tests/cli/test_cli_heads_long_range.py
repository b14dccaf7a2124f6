"""`heads MODEL --long-range`: no input text; its JSON extends the `detectors` object (previous_token, induction)
with `retrieval` and `pattern` per head, as the library computes them; an input beside it is one error line."""
from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT
from transformer.analysis import long_range_heads
from transformer.cli import main
from transformer.store import open_model

REVERSE = str(ROOT / "checkpoints" / "reverse")
DECODER_ONLY = str(ROOT / "checkpoints" / "reverse-decoder-only")


def test_long_range_json_extends_the_detectors_object(capsys):
    assert main(["heads", DECODER_ONLY, "--long-range", "--length", "48", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    found = long_range_heads(open_model(DECODER_ONLY), 48)
    detectors = out["detectors"]
    assert {"previous_token", "induction", "retrieval"} <= set(detectors["best"]) | {"retrieval"}
    assert {"heads", "best", "kind", "retrieval", "pattern"} <= set(detectors)
    assert out["length"] == 48 == detectors["pattern"]["length"]
    by_label = {h["label"]: h for h in detectors["pattern"]["heads"]}
    for row in found.frame.itertuples():
        assert by_label[row.label]["pattern"] == row.pattern
        assert by_label[row.label]["retrieval"] == pytest.approx(row.retrieval, abs=1e-4)
    assert {h["label"] for h in detectors["retrieval"]["heads"]} == set(by_label)


def test_long_range_text_labels_the_reversal_cross_heads(capsys):
    assert main(["heads", REVERSE, "--long-range"]) == 0
    out = capsys.readouterr().out
    assert "cross:L1H4     anti-diagonal" in out and "strongest retrieval head: dec:" in out


@pytest.mark.parametrize("extra", [["abc"], ["--valid", "3"], ["--corpus", "x.txt"]])
def test_long_range_takes_no_input(capsys, extra):
    code = main(["heads", REVERSE, *extra, "--long-range"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and "--long-range needs no input" in captured.err
