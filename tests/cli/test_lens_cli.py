"""`decode --lens` / `--encoder-layer` and the notebook's `lens`: the same figures as the library, and one line for
each bad request."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ROOT
from transformer import notebook
from transformer.analysis import every_step_lens, lens_grid, step_lens
from transformer.cli import main
from transformer.decode import greedy_decode
from transformer.store import open_model

REVERSE = str(ROOT / "checkpoints" / "reverse")
DECODER_ONLY = str(ROOT / "checkpoints" / "reverse-decoder-only")
TEXT = "abcdefghij"


def test_decode_lens_writes_the_librarys_lens_into_the_trace_json(tmp_path: Path, capsys):
    path = tmp_path / "trace.json"
    assert main(["decode", REVERSE, TEXT, "--lens", "--lens-top-k", "3", "--trace-json", str(path)]) == 0
    captured = capsys.readouterr()
    adapter = open_model(REVERSE)
    result = greedy_decode(adapter, TEXT, residuals=True)
    expected = every_step_lens(adapter, result, k=3)
    assert captured.out == result.output_text + "\n"
    assert "lens, step 1:" in captured.err and "embeddings" in captured.err
    data = json.loads(path.read_text())["lens"]
    assert data["units"] == "nats" and data["layers"][0] == "embeddings"
    assert len(data["steps"]) == len(expected)
    for written, lens in zip(data["steps"], expected, strict=True):
        assert written["token"] == lens.token
        assert [layer["rank"] for layer in written["layers"]] == [p.rank for p in lens.layers]
        assert [layer["kl"] for layer in written["layers"]] == pytest.approx([p.kl for p in lens.layers])
        assert [t for t, _ in written["layers"][-1]["top_k"]] == [t for t, _ in lens.layers[-1].top_k]


def test_decode_lens_with_a_reference_is_the_teacher_forced_lens(tmp_path: Path, capsys):
    from transformer.decode import teacher_forced
    path = tmp_path / "trace.json"
    assert main(["decode", REVERSE, TEXT, "--reference", "jihgfedcba", "--lens", "--trace-json", str(path)]) == 0
    adapter = open_model(REVERSE)
    expected = every_step_lens(adapter, teacher_forced(adapter, TEXT, "jihgfedcba", residuals=True))
    written = json.loads(path.read_text())["lens"]["steps"]
    assert [[layer["rank"] for layer in s["layers"]] for s in written] == [[p.rank for p in s.layers] for s in expected]


def test_decode_encoder_layer_decodes_from_that_layer(tmp_path: Path, capsys):
    path = tmp_path / "trace.json"
    assert main(["decode", REVERSE, TEXT, "--encoder-layer", "0", "--trace-json", str(path)]) == 0
    expected = greedy_decode(open_model(REVERSE), TEXT, encoder_layer=0)
    assert capsys.readouterr().out == expected.output_text + "\n"
    assert json.loads(path.read_text())["encoder_layer"] == 0


@pytest.mark.parametrize("model, flags, message", [
    (REVERSE, ["--encoder-layer", "0", "--reference", "abc"], "not with --reference"),
    (REVERSE, ["--lens", "--lens-top-k", "500"], "at most 50 tokens"),
    (REVERSE, ["--encoder-layer", "9"], "layer 0 (the embeddings) to"),
    (REVERSE, ["--encoder-layer", "-1"], "must be 0 or more"),
    (DECODER_ONLY, ["--encoder-layer", "0"], "has no encoder"),
])
def test_bad_lens_requests_get_one_line(model, flags, message, capsys):
    assert main(["decode", model, TEXT, *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_the_notebook_lens_is_the_librarys():
    adapter = open_model(REVERSE)
    result = greedy_decode(adapter, TEXT, residuals=True)
    grid = notebook.lens(adapter, TEXT)
    assert grid.equals(lens_grid(every_step_lens(adapter, result)).to_frame())
    one = notebook.lens(REVERSE, TEXT, step=2)
    assert list(one["rank"]) == [p.rank for p in step_lens(adapter, result, 1).layers]
    with pytest.raises(ValueError, match="steps 1 to"):
        notebook.lens(adapter, TEXT, step=99)
