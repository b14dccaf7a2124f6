"""train --keep-snapshots N keeps the weights every N steps (and at the end) under the run's snapshots/, none
overwritten, not even by --save-every's checkpoint; `heads RUN --corpus FILE --snapshots --json` gives each head's
statistics at every snapshot, and at the last one they are the final model's (docs/corpus-statistics.md)."""
from __future__ import annotations

import json

import pytest
import torch

from transformer.analysis import CORPUS_STATISTICS
from transformer.cli import main
from transformer.store import list_snapshots, load_checkpoint

pytestmark = pytest.mark.slow  # trains

TINY = ["--task", "reverse", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--batch-size", "16",
        "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--warmup", "2", "--seed", "1",
        "--eval-every", "1000", "--probe-frames", "0"]


def test_a_run_keeps_snapshots_and_their_statistics_end_at_the_final_models(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", *TINY, "--steps", "7", "--keep-snapshots", "3", "--save-every", "2", "--out",
                 str(out)]) == 0
    snapshots = list_snapshots(out)
    assert [step for step, _ in snapshots] == [3, 6, 7]  # every 3 steps and the end; --save-every kept them
    final = load_checkpoint(out, load_optimizer=False)
    first, last = (load_checkpoint(folder, load_optimizer=False) for _, folder in (snapshots[0], snapshots[-1]))
    assert first.step == 3 and first.optimizer_state is None and (snapshots[0][1] / "model.safetensors").is_file()
    weights = final.model.state_dict()
    assert all(torch.equal(weights[n], w) for n, w in last.model.state_dict().items())
    assert not all(torch.equal(weights[n], w) for n, w in first.model.state_dict().items())

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c d\nq r s\nx y z w v\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["heads", str(out), "--corpus", str(corpus), "--snapshots", "--json"]) == 0
    curves = json.loads(capsys.readouterr().out)
    assert curves["steps"] == [3, 6, 7] and curves["sentences"] == [3, 3, 3]
    assert main(["heads", str(out), "--corpus", str(corpus), "--json"]) == 0  # the final model's
    want = {(h["kind"], h["layer"], h["head"]): h for h in json.loads(capsys.readouterr().out)["heads"]}
    assert len(curves["heads"]) == len(want) and any(h["alignment"] is not None for h in want.values())
    for head in curves["heads"]:
        row = want[(head["kind"], head["layer"], head["head"])]
        for name in CORPUS_STATISTICS:
            assert len(head[name]) == 3
            assert head[name][-1] == pytest.approx(row[name], abs=1e-6)  # None (NaN) where the kind has none
    entropies = {tuple(h["entropy"]) for h in curves["heads"]}
    assert any(len(set(e)) > 1 for e in entropies)  # the heads change over training


def test_a_run_without_snapshots_is_one_clear_line(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\n", encoding="utf-8")
    assert main(["heads", "checkpoints/reverse", "--corpus", str(corpus), "--snapshots"]) == 2
    err = capsys.readouterr().err
    assert "no weight snapshots" in err and "--keep-snapshots" in err and "Traceback" not in err
