"""`heads MODEL --corpus FILE` computes the statistics by default; `--sweep` asks for the per-sentence ablation
sweep averaged over the corpus instead, the same as the older `--file PATH` (kept as an alias)."""
from __future__ import annotations

import json

from transformer.cli import main


def _json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_the_sweep_over_a_corpus_is_on_request_and_equals_file(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c d\nq r s\n", encoding="utf-8")
    stats = _json(["heads", "checkpoints/reverse", "--corpus", str(corpus), "--json"], capsys)
    assert stats["mode"] == "greedy" and "js" in stats and "inputs" not in stats  # statistics by default
    swept = _json(["heads", "checkpoints/reverse", "--corpus", str(corpus), "--sweep", "--no-agreement", "--json"],
                  capsys)
    old = _json(["heads", "checkpoints/reverse", "--file", str(corpus), "--no-agreement", "--json"], capsys)
    assert swept["inputs"] == old["inputs"] == 2
    assert [(h["label"], h["drop"]) for h in swept["heads"]] == [(h["label"], h["drop"]) for h in old["heads"]]


def test_sweep_without_a_corpus_is_one_clear_line(capsys):
    assert main(["heads", "checkpoints/reverse", "abc", "--sweep"]) == 2
    err = capsys.readouterr().err
    assert "--sweep goes with --corpus FILE" in err and "Traceback" not in err
