"""`decode --internals HEAD` and `decode --contributions`: one head's computation and every head's contribution map
go into the trace JSON with the model's own numbers; a head the model has not got is one line, exit 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from transformer.adapters import adapter_for
from transformer.analysis import capture_decode, key_vectors
from transformer.cli import main
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint, open_model

TEXT = "hello"


@pytest.fixture(scope="module")
def reverse(tiny_checkpoint_dir) -> Path:
    return tiny_checkpoint_dir / "reverse"


def test_internals_hold_one_heads_computation(reverse: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "trace.json"
    assert main(["decode", str(reverse), TEXT, "--trace-json", str(out), "--internals", "cross:L1H2"]) == 0
    saved = json.loads(out.read_text())
    entry = saved["internals"]
    assert (entry["kind"], entry["layer"], entry["head"]) == ("cross", 0, 1)
    weights = torch.tensor(entry["weights"])
    trace = torch.tensor(saved["attention"]["cross"])[0, 1]  # [layer][head][query][key]
    torch.testing.assert_close(weights[entry["first_row"]:], trace, atol=1e-5, rtol=0)
    assert weights.sum(-1).tolist() == pytest.approx([1.0] * len(weights), abs=1e-5)
    assert len(entry["key_tokens"]) == weights.shape[1] and len(entry["query_tokens"]) == weights.shape[0]
    scores = torch.tensor(entry["dots"]) * entry["scale"]
    torch.testing.assert_close(torch.tensor(entry["scores"]), scores, atol=1e-4, rtol=1e-5)  # cross: no terms


def test_contributions_are_every_heads_map(reverse: Path, tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    assert main(["decode", str(reverse), TEXT, "--trace-json", str(out), "--contributions"]) == 0
    saved = json.loads(out.read_text())["contributions"]
    ckpt = load_checkpoint(reverse, load_optimizer=False)
    adapter = adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer)
    result = greedy_decode(adapter, TEXT)
    captured = capture_decode(adapter, result)
    last = result.trace.axis_sizes("cross")[0] - 1
    expected = key_vectors(adapter, captured.insides, "cross", 1, 0, captured.query_of_row("cross", last)).norm(dim=-1)
    assert saved["heads"]["cross"][1][0][last] == pytest.approx(expected.tolist(), abs=1e-5)
    assert set(saved["mean"]) == set(adapter.family.kinds)
    assert "Kobayashi" in saved["formula"]


def test_decoder_self_internals_write_masked_keys_as_null(reverse: Path, tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    assert main(["decode", str(reverse), TEXT, "--trace-json", str(out), "--internals", "dec:L1H1"]) == 0
    mask = json.loads(out.read_text())["internals"]["terms"]["mask"]
    assert mask[0][0] == 0.0 and mask[0][-1] is None  # the first query may not see the last key: -inf, as null


@pytest.mark.parametrize("flags, message", [
    (["--internals", "cross:L9H1"], "no layer L9 in cross; it has L1-L"),  # numbered as the flag numbers them
    (["--internals", "cross:L1H9"], "no head H9 in cross; it has H1-H"),
    (["--internals", "nonsense"], "cannot read head"),
    (["--internals", "self:L1H1"], "no attention kind 'self'"),
])
def test_a_head_the_model_has_not_got_is_one_line(reverse: Path, tmp_path: Path, capsys, flags, message) -> None:
    assert main(["decode", str(reverse), TEXT, "--trace-json", str(tmp_path / "t.json"), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and message in err[0]


def test_internals_need_a_trace_file(reverse: Path, capsys) -> None:
    assert main(["decode", str(reverse), TEXT, "--contributions"]) == 2
    assert "--trace-json" in capsys.readouterr().err


def test_a_decoder_only_model_has_its_self_attention(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    assert main(["decode", "checkpoints/reverse-decoder-only", "abc", "--trace-json", str(out),
                 "--internals", "self:L1H1", "--contributions"]) == 0
    saved = json.loads(out.read_text())
    adapter = open_model("checkpoints/reverse-decoder-only")
    assert set(saved["contributions"]["heads"]) == {"self"} == set(adapter.family.kinds)
    assert saved["internals"]["first_row"] == 0
