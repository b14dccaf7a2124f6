"""The CLI on causal language models: decode (with its trace), heads (with the decoder-only detectors) and eval
(perplexity on a text file)."""
from __future__ import annotations

import json
import math

import pytest

from tests.helpers.hf_causal_models import build
from transformer.cli import main


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return build("llama", tmp_path_factory.mktemp("cli_causal") / "llama")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_decode_writes_a_decoder_only_trace(llama, capsys, tmp_path):
    path = tmp_path / "trace.json"
    code, out, _ = run(capsys, "decode", llama, "A dog runs", "--max-steps", "4", "--trace-json", path)
    data = json.loads(path.read_text())
    assert code == 0 and out.strip() and data["family"] == "decoder-only" and data["kinds"] == ["self"]
    assert data["head_groups"]["self"] == [0, 0, 1, 1]


def test_heads_reports_previous_token_and_induction_scores(llama, capsys):
    code, out, _ = run(capsys, "heads", llama, "A dog runs", "--json", "--ig-steps", "4")
    data = json.loads(out)
    assert code == 0 and data["most_important"].startswith("self:")
    detectors = data["detectors"]
    assert detectors["kind"] == "self" and len(detectors["heads"]) == 2 * 4
    assert all(0 <= h["previous_token"] <= 1 and 0 <= h["induction"] <= 1 for h in detectors["heads"])
    assert data["agreement"]["best"]["best_head"].startswith("self:")


def test_eval_reports_perplexity_in_the_models_tokens(llama, capsys, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("A dog runs on the grass.\n\nTwo men sit on a bench.\n")
    code, out, _ = run(capsys, "eval", llama, "--text-file", text)
    data = json.loads(out)
    assert code == 0 and data["lines"] == 2 and data["tokens"] > 10 and "model's own tokens" in data["counted"]
    assert data["perplexity"] == pytest.approx(math.exp(data["nll_per_token"]))


def test_eval_text_file_on_an_encoder_decoder_is_one_clear_line(capsys, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("abc\n")
    code, _, err = run(capsys, "eval", "checkpoints/reverse", "--text-file", text)
    assert code == 2 and err.count("\n") == 1 and "decoder-only" in err
